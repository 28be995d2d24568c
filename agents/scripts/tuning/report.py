"""What a tuning study found: the table of its trials and its best config as a config function.

`write(logdir, study, dimensions)` writes `trials.md` and `trials.json` (the
study's settings, its command naming no directory of the machine, and every
trial: state, score, the steps it reached, its sampled keys, its runs'
evaluations)
and, once a trial completed, `best_config.py`: a config function that calls
the base config and overrides the searched keys with the best trial's values,
to paste into a module of configs and train with `--config=module:function`.
"""

import json
import math
import os
import re
import textwrap

import optuna

from agents.scripts.tuning import studies

_STATES = {
    optuna.trial.TrialState.COMPLETE: 'complete',
    optuna.trial.TrialState.PRUNED: 'pruned',
    optuna.trial.TrialState.FAIL: 'failed',
    optuna.trial.TrialState.RUNNING: 'unfinished',
    optuna.trial.TrialState.WAITING: 'waiting',
}


def rows(study, dimensions):
    """One dict per trial of the study, by number: what the table and the JSON show.

    Args:
      study: Optuna study of the tune command.
      dimensions: The study's `search_space.Dimension`s.

    Returns:
      List of dicts with `trial`, `state`, `score` (the trial's value; a pruned
      trial's last reported score; None), `steps` (trained by its last report,
      counted over its runs), `seed_scores`, `config` (the sampled keys'
      values), `evaluations` (of each run, `[step, score]` lists) and `error`.
    """
    result = []
    for trial in study.get_trials(deepcopy=False):
        score = trial.value
        if score is None and trial.intermediate_values:
            score = trial.intermediate_values[max(trial.intermediate_values)]
        result.append(dict(
            trial=trial.number, state=_STATES[trial.state], score=score,
            steps=max(trial.intermediate_values, default=None),
            seed_scores=trial.user_attrs.get('seed_scores'),
            config={dimension.key: dimension.value(trial.params[dimension.key])
                    for dimension in dimensions if dimension.key in trial.params},
            evaluations=trial.user_attrs.get('evaluations', {}),
            error=trial.user_attrs.get('error')))
    return result


def markdown(table, dimensions):
    """A Markdown table of the trials' rows, the best trial's number in bold."""
    best = _best(table)
    keys = [dimension.key for dimension in dimensions]
    lines = [
        '| trial | state | score | steps | ' + ' | '.join(keys) + ' |',
        '|---:|---|---:|---:|' + '---|' * len(keys)]
    for row in table:
        number = f'**{row["trial"]}**' if best and row is best else str(row['trial'])
        state = row['state'] + (f': {row["error"]}' if row['error'] else '')
        values = [_format(row['config'][key]) if key in row['config'] else ''
                  for key in keys]
        lines.append(
            f'| {number} | {state.replace("|", "/")} | {_format_score(row["score"])} | '
            f'{"" if row["steps"] is None else row["steps"]} | ' + ' | '.join(values) + ' |')
    return '\n'.join(lines)


def best_config(study, table):
    """The Python source of a config function of the best completed trial; None if none.

    Args:
      study: Optuna study of the tune command.
      table: Its `rows`.

    Returns:
      Source text of a module with one config function, `<base>_tuned`.
    """
    best = _best(table)
    if best is None:
        return None
    settings = studies.settings_of(study)
    module, _, function = settings['config'].rpartition(':')
    call = f'{module}.{function}' if module else f'configs.{function}'
    importing = f'import {module}' if module else 'from agents.scripts import configs'
    seeds = ', '.join(map(str, settings['seeds']))
    overrides = ''.join(
        f'        {key}={_python(value)},\n' for key, value in sorted(best['config'].items()))
    command = '\n'.join(textwrap.wrap(
        settings['command'], 88, initial_indent='    ', subsequent_indent='        ',
        break_long_words=False, break_on_hyphens=False))
    return (
        f'"""The best trial of a tuning study, as a config function.\n'
        f'\n'
        f'The study of the config {settings["config"]}:\n'
        f'\n'
        f'{command}\n'
        f'"""\n'
        f'\n'
        f'{importing}\n'
        f'\n'
        f'\n'
        f'def {function}_tuned():\n'
        f'    """The {function} config with the keys of trial {best["trial"]} '
        f'(score {best["score"]:.1f}).\n'
        f'\n'
        f'    Tuned at {settings["steps"]:,} steps on seeds {seeds}; report results of other '
        f'seeds.\n'
        f'    """\n'
        f'    config = {call}()\n'
        f'    config.update(\n'
        f'{overrides}'
        f'    )\n'
        f'    return config\n')


def write(logdir, study, dimensions):
    """Write the table of trials and the best config into the study directory.

    Returns:
      Tuple of the Markdown table and the path of the best config, or None if
      no trial completed.
    """
    table = rows(study, dimensions)
    text = markdown(table, dimensions)
    _write_text(os.path.join(logdir, 'trials.md'), text + '\n')
    settings = studies.settings_of(study)
    settings = dict(settings, command=portable_command(settings['command']))
    _write_text(os.path.join(logdir, 'trials.json'), json.dumps(dict(
        settings=settings, trials=table), indent=1) + '\n')
    source = best_config(study, table)
    if source is None:
        return text, None
    path = os.path.join(logdir, 'best_config.py')
    _write_text(path, source)
    return text, path


def portable_command(command, directory=None):
    """The command with no directory of the machine in it, for a record that may move.

    An absolute path inside `directory` (where the command ran: the working
    directory by default) is written relative to it, and any other as
    `DIR/<its last name>`.
    """
    directory = directory or os.getcwd()

    def relative(match):
        path = os.path.normpath(match.group(0))
        if os.path.commonpath([path, directory]) == directory:
            return os.path.relpath(path, directory)
        return 'DIR/' + os.path.basename(path)

    return re.sub(r'(?<![^\s=,])/[^\s,]*', relative, command)


def _best(table):
    complete = [row for row in table if row['state'] == 'complete']
    return max(complete, key=lambda row: row['score'], default=None)


def _python(value):
    """Source text of a config value; lists, as the space file gives them, as tuples."""
    if isinstance(value, list):
        return repr(tuple(value))
    return repr(value)


def _format_score(score):
    return '' if score is None else f'{score:.1f}'


def _format(value):
    if isinstance(value, float):
        return 'NaN' if math.isnan(value) else f'{value:.4g}'
    if isinstance(value, list):
        return str(tuple(value))
    return str(value)


def _write_text(path, text):
    temporary = path + '.tmp'
    with open(temporary, 'w') as file_:
        file_.write(text)
    os.replace(temporary, path)
