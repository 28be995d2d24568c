"""Search spaces of the tune command: the config keys a study searches, and over what.

A search space maps config keys to what a study samples for them: a range
`{low: L, high: H}` (with `log: true` to sample on a log scale) for a key whose
schema type is a number, integers for an `int` key, or a list of `choices` for
any key. Without a space file, a study searches `DEFAULT`, of the keys that the
base config uses; a space file (YAML or JSON) replaces it:

    learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}
    update_epochs: {low: 5, high: 20}
    policy_layers: {choices: [[64, 64], [256, 256]]}

Every bound and choice is checked against the schema like a config value, so a
misspelt key or an out-of-range bound is refused before a study starts.
Sampled floats are rounded to three significant digits, so a tuned config
reads like a written one and reproduces its trial exactly.
"""

import dataclasses
import json

from agents.scripts import config_schema
from agents.scripts import registry
from agents.scripts import run_api
from agents.scripts.cli import config_names
from agents.tools import schema
from agents.tools.schema import ConfigError

# The default space: the PPO keys that shape learning, over ranges around the
# published settings of PPO on MuJoCo and classic control (rl-baselines3-zoo's
# search ranges, narrowed where its tuned settings never went).
DEFAULT = {
    'learning_rate': dict(low=1e-5, high=1e-3, log=True),
    'learning_rate_schedule': dict(choices=['constant', 'linear']),
    'clip_ratio': dict(low=0.1, high=0.3),
    'kl_target': dict(low=3e-3, high=3e-2, log=True),
    'entropy_coef': dict(low=1e-6, high=1e-2, log=True),
    'value_coef': dict(low=0.25, high=2.0),
    'max_gradient_norm': dict(low=0.3, high=5.0, log=True),
    'discount': dict(choices=[0.95, 0.98, 0.99, 0.995, 0.999]),
    'gae_lambda': dict(low=0.8, high=1.0),
    'update_epochs': dict(low=3, high=20),
    'minibatch_size': dict(choices=[32, 64, 128, 256]),
    'rollout_length': dict(choices=[64, 128, 256, 512]),
    'init_std': dict(low=0.1, high=1.0, log=True),
    'policy_layers': dict(choices=[[64, 64], [128, 128], [256, 256]]),
    'value_layers': dict(choices=[[64, 64], [128, 128], [256, 256]]),
    'activation': dict(choices=['tanh', 'relu']),
}

# Keys of `DEFAULT` that matter only to some configs, searched where the base
# config uses them: a predicate of the base config.
_USED_WHEN = {
    'clip_ratio': lambda config: config.objective == 'clip',
    'kl_target': lambda config: config.objective == 'kl_penalty',
    'gae_lambda': lambda config: config.gae_lambda is not None,
    'minibatch_size': lambda config: config.minibatch_size is not None,
    'rollout_length': lambda config: config.rollout_length is not None,
    'init_std': lambda config: (
        registry.REGISTRY.name_of(config.network) != 'feed_forward_categorical'),
}

# Keys the tune command sets itself, from its flags.
_SET_BY_FLAGS = {'seed': '--seeds', 'steps': '--steps'}

# The keys of the forms of a spec: choices, or a range.
_FORMS = ({'choices'}, {'low', 'high'}, {'low', 'high', 'log'})

# Choices that Optuna stores as they are; others are stored by a label.
_PLAIN_TYPES = (type(None), bool, int, float, str)


@dataclasses.dataclass(frozen=True)
class Dimension:
    """What a study samples for one config key.

    Attributes:
      key: Config key.
      kind: 'int' or 'float' for a range, 'choices' for a list of values.
      low: Lower bound of a range, inclusive.
      high: Upper bound of a range, inclusive.
      log: Whether a range is sampled on a log scale.
      choices: Tuple of the values of a choice, as the config takes them.
    """

    key: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple | None = None

    def spec(self):
        """The dimension as a space file writes it, plain data for JSON."""
        if self.kind == 'choices':
            return dict(choices=list(self.choices))
        return dict(low=self.low, high=self.high, log=self.log)

    def sample(self, trial):
        """Sample the key's config value in an Optuna trial."""
        if self.kind == 'int':
            param = trial.suggest_int(self.key, self.low, self.high, log=self.log)
        elif self.kind == 'float':
            param = trial.suggest_float(self.key, self.low, self.high, log=self.log)
        else:
            param = trial.suggest_categorical(self.key, [label(each) for each in self.choices])
        return self.value(param)

    def value(self, param):
        """The config value of the parameter `param` that a trial sampled for the key."""
        if self.kind == 'int':
            return int(param)
        if self.kind == 'float':
            return min(max(float(f'{param:.3g}'), self.low), self.high)
        return self.choices[[label(each) for each in self.choices].index(param)]


def label(choice):
    """How Optuna stores a choice: plain values as they are, others as JSON text."""
    return choice if isinstance(choice, _PLAIN_TYPES) else json.dumps(choice)


def resolve(specs, config_name, source=None):
    """Check a space against the schema of the config it searches.

    Args:
      specs: Dict of config key to its spec, `{low, high, log}` or `{choices}`,
        as in a space file; `DEFAULT` if None, of the keys the config uses.
      config_name: Name of the base config.
      source: Where the specs come from, for error messages: the space file.

    Raises:
      ConfigError: In one line, for a key the config does not have (naming the
        nearest), a key the tune command sets, a spec of the wrong form, or a
        bound or choice that is not a valid value of its key.

    Returns:
      Tuple of `Dimension`s, sorted by key.
    """
    base = run_api.make_config(config_name)
    if specs is None:
        specs = {key: spec for key, spec in DEFAULT.items()
                 if key not in _USED_WHEN or _USED_WHEN[key](base)}
        source = 'default search space'
    source = source or 'search space'
    values = config_names.find(config_name)()
    types = schema.key_types(config_schema.RunConfig, values, registry.REGISTRY)
    dimensions = []
    for key, spec in sorted(specs.items(), key=lambda item: str(item[0])):
        if key in _SET_BY_FLAGS:
            raise ConfigError(
                f'Invalid {source}: {key} is set by {_SET_BY_FLAGS[key]}, not searched.')
        if key not in types:
            config_schema.make({**values, key: None}, source)  # Names the nearest key.
        dimension = _dimension(key, spec, types[key], source)
        for candidate in dimension.choices or (dimension.low, dimension.high):
            config_schema.make({**values, key: candidate}, source)
        dimensions.append(dimension)
    return tuple(dimensions)


def _dimension(key, spec, annotation, source):
    """The dimension of one spec, of the form its key's type allows."""
    if not isinstance(spec, dict) or set(spec) not in _FORMS:
        raise ConfigError(
            f'Invalid {source}: {key} needs {{low: L, high: H}} (and log: true) or '
            f'{{choices: [...]}}, got {spec!r}.')
    if 'choices' in spec:
        choices = spec['choices']
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f'Invalid {source}: the choices of {key} must be a list.')
        return Dimension(key, 'choices', choices=tuple(choices))
    kind = 'float' if schema.admits(annotation, float) else (
        'int' if schema.admits(annotation, int) else None)
    if kind is None:
        raise ConfigError(
            f'Invalid {source}: {key} is {schema.describe_type(annotation)}, not a number; '
            f'give it {{choices: [...]}}.')
    low, high, log = spec['low'], spec['high'], spec.get('log', False)
    numbers = (int,) if kind == 'int' else (int, float)
    if not all(isinstance(bound, numbers) and not isinstance(bound, bool)
               for bound in (low, high)) or not low < high:
        raise ConfigError(
            f'Invalid {source}: the range of {key} needs {kind} bounds low < high, got '
            f'{low!r} and {high!r}.')
    if not isinstance(log, bool) or (log and low <= 0):
        raise ConfigError(
            f'Invalid {source}: log of {key} must be true or false, and true needs low > 0.')
    if kind == 'float':
        low, high = float(low), float(high)
    return Dimension(key, kind, low=low, high=high, log=log)
