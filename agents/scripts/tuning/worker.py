"""A worker of a tuning study: it takes trials from the study on disk and trains their runs.

The tune command runs one worker in its own process, or `--jobs` workers as
processes of this module (`python -m agents.scripts.tuning.worker JOB`, JOB the
JSON of `run`'s argument), all on one study in SQLite. A worker first takes a
trial that an earlier command left unfinished (stopped by Ctrl-C, SIGTERM or
a crash) and continues its runs from their checkpoints under the trial's own
number; then it starts new trials while the study has fewer than its number.

A trial trains one ordinary run per tuning seed, one after the other, in the
run directory `<study>/trial<NNNN>_seed<S>-<config>`, which TensorBoard shows
and `train.py --timestamp=trial<NNNN>_seed<S>` resumes. Evaluation scores are
reported to the trial at the multiples of the study's `report_every` steps,
counted over its runs, and the pruner may stop the trial there. A trial's
score is the mean over its seeds of the mean of each run's last `last_evals`
evaluations.

The environment workers of a trial's runs import this module when it runs as
the main one, so it imports TensorFlow, and the modules that do, inside the
functions that use them.
"""

import contextlib
import json
import os
import shutil
import signal
import sys
import warnings

from absl import logging
import numpy as np
import optuna

from agents.scripts import train
from agents.scripts.cli import interrupts
from agents.scripts.cli import tensorflow_log
from agents.scripts.tuning import studies
from agents.tools import graph_errors
from agents.tools.schema import ConfigError


def run(job):
    """Run trials of the study until it has its number of trials, none left unfinished.

    Args:
      job: Dict of what the command asks: `logdir`, `command` (an id of the
        command, marking the trials its workers took), `trials`,
        `startup_trials`, `prune`, `prune_after`, `env_backend`,
        `backend_options`, `env_timeout` (or None), `register`, and for a
        worker process, `parent`, the process id of the command.

    Raises:
      KeyboardInterrupt: On Ctrl-C or SIGTERM, once the current run stored a
        checkpoint; the trial stays unfinished for the next command.
    """
    from agents.scripts import registry
    from agents.scripts.tuning import search_space

    registry.import_modules(job['register'])
    logging.set_verbosity(logging.WARNING)  # The study's lines, not each run's.
    pruner = optuna.pruners.MedianPruner(
        n_startup_trials=job['startup_trials'], n_warmup_steps=job['prune_after']
    ) if job['prune'] else optuna.pruners.NopPruner()
    study = studies.open_study(job['logdir'], pruner=pruner)
    settings = studies.settings_of(study)
    dimensions = search_space.resolve(settings['space'], settings['config'])
    with interrupts.raised_on():
        while True:
            trial, record = _next_trial(study, job, settings['sampler_seed'])
            if trial is None:
                return
            _run_trial(study, trial, record, job, settings, dimensions)


class _Record:
    """What a trial did so far: the steps it reported, and each run's evaluations.

    The evaluations are kept in the trial's user attribute `evaluations`, a
    dict of run directory name to its list of `[step, score]`.
    """

    def __init__(self, frozen=None):
        self.reported = set(frozen.intermediate_values) if frozen else set()
        # Copied: the study's trials are shared with its storage's cache.
        self.evaluations = {
            run: [list(each) for each in evaluations]
            for run, evaluations in (frozen.user_attrs.get('evaluations', {}) if frozen else {}
                                     ).items()}


def _next_trial(study, job, sampler_seed):
    """The next trial of this command's workers: an unfinished one first, else a new one.

    A new trial is sampled by a sampler seeded with `sampler_seed` plus the
    trial's number, so that after the same earlier trials it samples the same
    settings, in whichever command or worker process it starts.

    Returns:
      Tuple of the trial and its `_Record`; (None, None) if the study has its
      number of trials.
    """
    if job.get('parent') and os.getppid() != job['parent']:
        return None, None  # The command was killed: its workers stop after their trials.
    with studies.trials_lock(job['logdir']):
        trials = study.get_trials(deepcopy=False)
        for frozen in trials:
            if (frozen.state == optuna.trial.TrialState.RUNNING and
                    frozen.user_attrs.get('command') != job['command']):
                # Left running by a command that stopped: the command lock
                # says that no process works on it.
                trial = optuna.trial.Trial(study, frozen._trial_id)
                trial.set_user_attr('command', job['command'])
                print(f'Continuing trial {trial.number}.', flush=True)
                return trial, _Record(frozen)
        started = sum(frozen.state != optuna.trial.TrialState.WAITING for frozen in trials)
        if started >= job['trials']:
            return None, None
        study.sampler = _sampler(job['startup_trials'], sampler_seed + len(trials))
        trial = study.ask()
        trial.set_user_attr('command', job['command'])
        return trial, _Record()


def _sampler(startup_trials, seed):
    """Optuna's TPE sampler, over all keys at once, with the constant liar for parallel trials."""
    with warnings.catch_warnings():
        # Multivariate TPE and the constant liar carry Optuna's experimental label.
        warnings.simplefilter('ignore', optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            n_startup_trials=startup_trials, multivariate=True, constant_liar=True, seed=seed)


def _run_trial(study, trial, record, job, settings, dimensions):
    """Train the trial's runs and tell the study how it ended."""
    import tensorflow as tf

    try:
        score = _train_trial(trial, record, job, settings, dimensions)
    except optuna.TrialPruned:
        print(f'Trial {trial.number} pruned.', flush=True)
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    except (ConfigError, tf.errors.OpError) as error:
        # A sampled config that the schema refuses, or a run that failed (an
        # environment raised, or the graph found a value that is not finite),
        # ends this trial only.
        message = graph_errors.summarize(error) if isinstance(error, tf.errors.OpError) else (
            str(error))
        trial.set_user_attr('error', message)
        print(f'Trial {trial.number} failed: {message}', flush=True)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(trial, score)
        print(f'Trial {trial.number} complete: score {score:.1f}; the best is trial '
              f'{study.best_trial.number}, {study.best_value:.1f}.', flush=True)


def _train_trial(trial, record, job, settings, dimensions):
    """Train one run per tuning seed with the trial's sampled keys; the trial's score.

    Raises:
      optuna.TrialPruned: If the pruner stops the trial after an evaluation.
    """
    from agents.scripts import run_api

    overrides = {dimension.key: dimension.sample(trial) for dimension in dimensions}
    overrides['steps'] = settings['steps']
    scores = []
    for index, seed in enumerate(settings['seeds']):
        logdir, resume = _prepare_run(
            job['logdir'], settings['config'], f'trial{trial.number:04d}_seed{seed}',
            dict(overrides, seed=seed))
        evaluations = record.evaluations.setdefault(os.path.basename(logdir), [])
        trial.set_user_attr('evaluations', record.evaluations)
        config = run_api.load_config(logdir)
        if job['env_timeout'] is not None:
            with config.unlocked():
                config.env_timeout = job['env_timeout']
        phases = train.train(
            config, logdir, job['env_backend'], job['backend_options'], resume=resume)
        with contextlib.closing(phases):  # Closed at once: the run stores its checkpoint now.
            for result in phases:
                if result.phase != 'eval':
                    continue
                print(f'Trial {trial.number}, seed {seed}: step {result.step}, score '
                      f'{result.score:.1f}.', flush=True)
                # A run resumed from an older checkpoint evaluates those steps again.
                evaluations[:] = [each for each in evaluations if each[0] < result.step]
                evaluations.append([result.step, result.score])
                trial.set_user_attr('evaluations', record.evaluations)
                reported = _report(trial, record, settings, index, result)
                finished = index + 1 == len(settings['seeds']) and (
                    result.step >= settings['steps'])
                if reported and not finished and trial.should_prune():
                    raise optuna.TrialPruned()
        scores.append(float(np.mean(
            [score for _, score in evaluations[-settings['last_evals']:]])))
    trial.set_user_attr('seed_scores', scores)
    return float(np.mean(scores))


def _report(trial, record, settings, index, result):
    """Report an evaluation to the trial at the points of the study's grid it reached.

    Runs of different trials evaluate at different steps (whole rounds of
    collection of their own sizes), while the pruner compares trials at equal
    steps. So the score of an evaluation is reported at each multiple of
    `report_every` (and at the run's last step) that it is the first
    evaluation at or after, counting the steps of the trial's earlier runs.

    Returns:
      Whether it reported at a point.
    """
    steps, every = settings['steps'], settings['report_every']
    points = [point for point in [*range(every, steps, every), steps] if point <= result.step]
    new = [index * steps + point for point in points
           if index * steps + point not in record.reported]
    for step in new:
        trial.report(result.score, step)
        record.reported.add(step)
    return bool(new)


def _prepare_run(base, config_name, timestamp, overrides):
    """The directory of a trial's run, created with its config unless it has a checkpoint.

    Returns:
      Tuple of the run directory and whether it resumes from a checkpoint.
    """
    import tensorflow as tf

    from agents.scripts import run_api

    logdir, exists = train.run_directory(base, config_name, timestamp)
    if exists and tf.train.latest_checkpoint(logdir):
        return logdir, True
    config = run_api.make_config(config_name, overrides)
    if exists:  # Stopped before its first checkpoint: nothing to continue.
        shutil.rmtree(logdir)
    run_api.save_config(config, logdir)
    return logdir, False


def main(argv):
    """Run the worker of the JSON job in `argv[1]`; exit quietly when stopped by a signal."""
    tensorflow_log.import_quietly()
    try:
        run(json.loads(argv[1]))
    except KeyboardInterrupt:
        sys.exit(128 + (interrupts.received_signal() or signal.SIGINT))


if __name__ == '__main__':
    main(sys.argv)
