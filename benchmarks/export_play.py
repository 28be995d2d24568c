r"""Does an exported policy play as well as its run evaluated it? TensorFlow and Gymnasium only.

Plays episodes with the mode of a policy written by `python -m
agents.scripts.export` (the SavedModel, or with --tflite the TFLite file) and
compares their mean score with the run's evaluation at the exported
checkpoint's step, read from the run's TensorBoard events and config. The
exported model passes unless its mean falls below the evaluation's by more
than both samples' spread explains: Welch's one-sided t-test, failing at p <
0.01. A policy that falls in a rare episode widens its own spread, so one
such episode does not fail it; one that plays worse in most episodes does.
The script imports neither `agents` nor anything that does (its neighbour
`reporting` needs only Gymnasium), and checks that no `agents` module was
loaded. It writes `benchmarks/results/export_play/<name>.json`, which names
the commit and processor of the player and, from the learning run's file
(`--run_file`), of the training run; the checkpoint is stored relative to its
run's log directory, so the record names no directory of the machine.

    python -m agents.scripts.train --logdir=/tmp/x --config=pendulum
    python -m agents.scripts.export --logdir=/tmp/x/<run> --outdir=/tmp/pendulum-policy
    python benchmarks/export_play.py --model=/tmp/pendulum-policy --name=pendulum
    python benchmarks/export_play.py --model=/tmp/pendulum-policy --name=pendulum_tflite --tflite
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import time

import gymnasium as gym
from lib import reporting
import tensorflow as tf

# What a record holds where what it names was not recorded.
NOT_RECORDED = 'not recorded'


class SavedModelPolicy:
    """Acts with the mode of an exported SavedModel, carrying a recurrent policy's state."""

    def __init__(self, directory):
        self._model = tf.saved_model.load(directory)
        self._act = self._model.signatures['serving_default']
        self._state = None

    def reset(self):
        if 'initial_state' in self._model.signatures:
            self._state = self._model.signatures['initial_state'](batch_size=tf.constant(1))

    def __call__(self, observ):
        outputs = self._act(observ=tf.constant([observ]), **(self._state or {}))
        if self._state is not None:
            self._state = {name: outputs[name] for name in self._state}
        return outputs['action'].numpy()[0]


class TFLitePolicy:
    """Acts with the mode of an exported TFLite file of a feed-forward policy."""

    def __init__(self, path):
        self._act = tf.lite.Interpreter(model_path=path).get_signature_runner('serving_default')

    def reset(self):
        pass

    def __call__(self, observ):
        return self._act(observ=tf.constant([observ]).numpy())['action'][0]


def play(policy, env, episodes, seed):
    """Scores of `episodes` episodes, the first reset with `seed`."""
    scores = []
    for episode in range(episodes):
        observ, _ = env.reset(seed=seed if episode == 0 else None)
        policy.reset()
        score, done = 0.0, False
        while not done:
            observ, reward, terminated, truncated, _ = env.step(policy(observ))
            score += float(reward)
            done = terminated or truncated
        scores.append(score)
    return scores


def run_evaluation(checkpoint):
    """The mean, std and episodes of the run's evaluation at the checkpoint's step."""
    run, step = os.path.dirname(checkpoint), int(checkpoint.rsplit('-', 1)[1])
    values = {}
    for path in sorted(glob.glob(os.path.join(run, 'eval', 'events.out.tfevents.*'))):
        for event in tf.compat.v1.train.summary_iterator(path):
            if event.step == step:
                values.update({value.tag: value.simple_value for value in event.summary.value})
    if 'mean_score' not in values:
        return None
    return dict(
        step=step, mean_score=values['mean_score'], std_score=values['std_score'],
        episodes=evaluation_episodes(checkpoint))


def evaluation_episodes(checkpoint):
    """The episodes each of the run's evaluations played: `eval_episodes` in its config.yaml."""
    with open(os.path.join(os.path.dirname(checkpoint), 'config.yaml')) as file_:
        match = re.search(r'^eval_episodes: *(\d+)$', file_.read(), re.MULTILINE)
    return int(match.group(1))


def training_run(path):
    """Where the played policy was trained: its run file, commit and processor.

    Args:
      path: The run's file of `benchmarks/learning.py`, or None.

    Returns:
      Dict of `file`, `commit` and `processor`, each "not recorded" where unknown.
    """
    if path is None:
        return dict.fromkeys(('file', 'commit', 'processor'), NOT_RECORDED)
    with open(path) as file_:
        run = json.load(file_)
    return dict(file=reporting.portable(os.path.abspath(path)),
                commit=run.get('commit', NOT_RECORDED),
                processor=run.get('processor', NOT_RECORDED))


def welch_test(scores, mean, std, count):
    """Welch's one-sided t-test that `scores` have a lower mean than a sample of `count`.

    Args:
      scores: The played episodes' scores.
      mean: Mean of the other sample.
      std: Its population standard deviation.
      count: Its size.

    Returns:
      Dict of the statistic `t`, the degrees of freedom `df` and the one-sided
      `p_value`: the chance of a mean as low as the played one, or lower, if
      both samples came from policies of equal mean.
    """
    played_error = statistics.variance(scores) / len(scores)
    other_error = std ** 2 / (count - 1)  # The sample variance over the count.
    error = played_error + other_error
    difference = statistics.fmean(scores) - mean
    if error == 0:
        return dict(t=None, df=None, p_value=1.0 if difference >= 0 else 0.0)
    t = difference / math.sqrt(error)
    df = error ** 2 / (played_error ** 2 / (len(scores) - 1) + other_error ** 2 / (count - 1))
    # The Student's t distribution's tail, by the regularized incomplete beta
    # function; in a graph of its own, whether or not eager execution is on.
    with tf.Graph().as_default():
        betainc = tf.math.betainc(df / 2, 0.5, df / (df + t ** 2))
        with tf.compat.v1.Session() as session:
            tail = 0.5 * float(session.run(betainc))
    return dict(t=t, df=df, p_value=tail if t < 0 else 1 - tail)


def main():
    """Play the exported policy, compare it with the run's evaluation, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--model', required=True, help='Directory written by the export.')
    parser.add_argument('--episodes', type=int, default=10)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--tflite', action='store_true', help='Play the TFLite file.')
    parser.add_argument(
        '--name', help='Write the results to benchmarks/results/export_play/NAME.json.')
    parser.add_argument('--out', help='Write the results to this JSON file instead.')
    parser.add_argument(
        '--run_file', help="The training run's file of benchmarks/learning.py, whose commit "
        'and processor the results name; "not recorded" without one.')
    args = parser.parse_args()
    load_before = os.getloadavg()
    with open(os.path.join(args.model, 'export.json')) as file_:
        export = json.load(file_)
    env = gym.make(export['env'], max_episode_steps=export['max_length'])
    if args.tflite:
        policy = TFLitePolicy(os.path.join(args.model, 'policy.tflite'))
    else:
        policy = SavedModelPolicy(args.model)
    start = time.time()
    scores = play(policy, env, args.episodes, args.seed)
    seconds = time.time() - start
    evaluation = run_evaluation(export['checkpoint'])
    mean, std = statistics.fmean(scores), statistics.pstdev(scores)
    checkpoint = export['checkpoint']
    result = dict(
        reporting.run_record(load_before), commit=reporting.commit(),
        processor=reporting.processor(), training_run=training_run(args.run_file),
        env=export['env'],
        checkpoint=reporting.portable(checkpoint, os.path.dirname(os.path.dirname(checkpoint))),
        format='tflite' if args.tflite else 'saved_model', episodes=args.episodes,
        seed=args.seed, scores=scores, mean_score=mean, std_score=std,
        seconds=seconds, run_evaluation=evaluation,
        agents_imported=any(name.split('.')[0] == 'agents' for name in sys.modules))
    if evaluation:
        test = welch_test(
            scores, evaluation['mean_score'], evaluation['std_score'], evaluation['episodes'])
        result.update(test, passed=test['p_value'] >= 0.01)
    print(json.dumps(result, indent=2))
    out = args.out or (args.name and os.path.join(
        reporting.results_dir(__file__), f'{args.name}.json'))
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, 'w') as file_:
            json.dump(result, file_, indent=2)
    return 0 if result.get('passed', True) and not result['agents_imported'] else 1


if __name__ == '__main__':
    sys.exit(main())
