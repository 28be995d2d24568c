"""The schema of a training configuration: the run's keys, then those of what it chooses.

`RunConfig` declares the keys of a run (task, budget, environments); the
chosen algorithm and network add the keys of their registry entries
(`agents.algorithms.ppo.config.PPOConfig`, `agents.parts.networks.NetworkConfig`).
`python -m agents.scripts.config_schema > docs/configs.md` writes the reference
page of all keys; a test checks that the committed page matches the schemas.
"""

from collections.abc import Callable
import dataclasses
import sys

from agents import tools
from agents.algorithms.ppo import config as ppo_config
from agents.parts import networks
from agents.scripts import environments
from agents.scripts import registry
from agents.tools import schema
from agents.tools.schema import key


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Keys of a training run, whatever its algorithm."""

    algorithm: Callable = key('ppo', 'Algorithm that acts and learns.', role='algorithm')
    env: str = key(
        schema.REQUIRED, 'Gymnasium id of the task, or a registered environment constructor.',
        role='env')
    env_kwargs: dict[str, bool | int | float | str | tuple[float, ...] | None] | None = key(
        None, 'Arguments of the Gymnasium id\'s task, passed to gymnasium.make, such as '
        '{include_cfrc_ext_in_observation: false} for Ant-v5; none if None.')
    max_length: int = key(schema.REQUIRED, 'Steps after which an episode is cut off.', at_least=1)
    steps: int = key(schema.REQUIRED, 'Environment steps to train on.', at_least=1)
    num_agents: int = key(30, 'Environments stepped together.', at_least=1)
    eval_episodes: int = key(
        10, 'Complete episodes of the policy\'s mode in each evaluation.', at_least=1)
    eval_every: int = key(
        10000, 'Training steps between evaluations, rounded to whole rounds of collection.',
        at_least=1)
    steps_per_run: int = key(
        16, 'Steps of every environment per session.run, looped in the graph: fewer calls '
        'from Python, same results.', at_least=1)
    seed: int | None = key(
        0, 'Environment i is seeded with 1000 * seed + i and the graph seed is set; None for '
        'unseeded.', at_least=0)
    normalize_ranges: bool = key(True, 'Map finite observation and action ranges to [-1, 1].')
    observation_mask: tuple[int, ...] | None = key(
        None, 'Indices of the flattened observation zeroed at every step, hiding them from '
        "the agent (the NoVel tasks' velocities, Ant's contact forces); nothing hidden if "
        'None.', at_least=0)
    previous_action: bool = key(
        False, 'Observe the previous action beside the observation, as the POPGym baselines '
        'do: a policy with memory then knows what it tried.')
    checkpoint_seconds: float = key(
        300, 'Also store a checkpoint when this many seconds passed since the last.', above=0)
    keep_checkpoints: int = key(5, 'Checkpoints kept on disk, the newest.', at_least=1)
    env_timeout: float | None = key(
        60, 'Seconds an environment may take for a step or reset before the run stops with '
        'an error; None waits forever.', above=0)

    def __post_init__(self):
        if isinstance(self.env, str):
            _check_environment_id(self.env, self.env_kwargs)
        elif self.env_kwargs:
            raise schema.ConfigError(
                'env_kwargs apply to a Gymnasium id; the env is a constructor, which takes no '
                'arguments, so give them to it')


def make(values, source='config'):
    """Validate configuration values and fill in the defaults.

    Args:
      values: Mapping of keys to values, such as a config function's dict or a
        loaded `config.yaml`; callables are given by registered name or object.
      source: Where the values come from, for error messages.

    Raises:
      ConfigError: Naming each unknown, missing, mistyped or out-of-range key.

    Returns:
      Locked AttrDict of every key, callables resolved to the registered objects.
    """
    return tools.AttrDict(schema.check(RunConfig, values, registry.REGISTRY, source))


_REFERENCE_INTRODUCTION = """\
# Config keys

<!-- Generated from the schemas by `python -m agents.scripts.config_schema >
docs/configs.md`; agents/scripts/config_schema_test.py checks that it matches. -->

Every key a training configuration may set, with its type, default, range and
meaning. A config function (`agents/scripts/configs.py`, or your own) returns
a dict of these keys; the run's keys are declared in
`agents/scripts/config_schema.py`, PPO's in `agents/algorithms/ppo/config.py`
and the built-in networks' in `agents/parts/networks.py`. A network or
algorithm of your own adds the keys of its registry entry. An unknown key, a
wrong type or a value out of range is refused before the run starts
([training.md](training.md#configs)).
"""


def markdown_tables():
    """Markdown tables of the keys of a run, of PPO and of the built-in networks."""
    sections = (
        ('Run', RunConfig), ('PPO', ppo_config.PPOConfig),
        ('Network', networks.NetworkConfig))
    return '\n\n'.join(
        f'## {title} keys\n\n{schema.markdown_table(keys)}' for title, keys in sections)


def reference_page():
    """The text of docs/configs.md: an introduction and the tables of every key."""
    return f'{_REFERENCE_INTRODUCTION}\n{markdown_tables()}\n'


def _check_environment_id(env, kwargs):
    # Gymnasium's id `module:EnvId` names the module that registers it. A saved
    # configuration imports no code, so the module must be imported already: by
    # the config function (run_api.make_config) or with --register.
    module = env.rpartition(':')[0]
    if module and module not in sys.modules:
        raise schema.ConfigError(
            f'env {env!r} names the module {module!r}, which a saved config does not '
            f'import; import it with --register={module}')
    try:
        environments.check_environment(env)
    except ValueError as error:
        raise schema.ConfigError(f'env: {error}') from None
    try:
        environments.check_environment_made(env, kwargs)
    except ValueError as error:
        raise schema.ConfigError(f'{"env_kwargs" if kwargs else "env"}: {error}') from None


if __name__ == '__main__':
    print(reference_page(), end='')
