"""Config values as YAML, without TensorFlow: the dialect of config.yaml, and `--set`.

A run's `config.yaml` is YAML data, read by ruamel.yaml's safe loader (YAML
1.2): numbers, strings, lists, mappings, null, and callables by their
registered names. A tagged value (`!!python/object/apply:os.system [...]`)
loads as a `Tagged`, which no config key accepts, so the schema refuses it
and nothing runs; the `!callable` tag of older files reads as the plain
string it tags.

`--set KEY=VALUE` reads each value with the same loader, so a value means on
the command line what it means in config.yaml: `--set steps=2e6` is a number,
`--set policy_layers=[64,64]` a list, `--set seed=null` None and
`--set env=popgym:popgym-RepeatPreviousEasy-v0` a string. An unquoted value
that looks like a decimal number is one, even where YAML 1.2 reads it as a
string (`.5e3`); a quoted one stays a string.

The commands check `--set` before TensorFlow loads; the config schema checks
the keys and their values when the run's config is made.
"""

import re

import ruamel.yaml

from agents.tools.schema import ConfigError

# A decimal number in any of the notations Python's float() reads, infinities
# and NaN left out: those YAML spells `.inf` and `.nan`.
_DECIMAL = re.compile(r'[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?')
_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


class Tagged:
    """A YAML value with a tag that configuration files do not use, kept to be refused."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value

    def __repr__(self):
        return f'{self.tag.replace("tag:yaml.org,2002:", "!!")} {self.value!r}'


def _construct_tagged(constructor, unused_suffix, node):
    if isinstance(node, ruamel.yaml.ScalarNode):
        value = constructor.construct_scalar(node)
    elif isinstance(node, ruamel.yaml.SequenceNode):
        value = constructor.construct_sequence(node, deep=True)
    else:
        value = constructor.construct_mapping(node, deep=True)
    return Tagged(node.tag, value)


def yaml():
    """The YAML reader and writer of configs: safe, block style, tags kept as `Tagged`."""
    yaml_ = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml_.default_flow_style = False
    # Older files tagged callables by import path; as plain strings they name
    # registry entries, which know the import paths of the registered objects.
    yaml_.constructor.add_constructor('!callable', lambda loader, node: node.value)
    yaml_.constructor.add_multi_constructor('', _construct_tagged)
    return yaml_


def describe_error(error):
    """What a ruamel.yaml error says is wrong, and where, in one line."""
    problem = getattr(error, 'problem', None) or str(error).split('\n')[0]
    mark = getattr(error, 'problem_mark', None)
    where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark else ''
    return f'{problem}{where}.'


def read_value(text):
    """The value of one `--set` assignment: `text` read as YAML, decimal numbers as numbers.

    Raises:
      ruamel.yaml.YAMLError: If `text` is not YAML.
    """
    value = yaml().load(text)
    if isinstance(value, str) and _DECIMAL.fullmatch(text.strip()):  # Unquoted.
        return float(value)
    return value


def read_assignments(assignments):
    """The config keys and values that `--set KEY=VALUE` flags assign.

    Args:
      assignments: List of the flags' `KEY=VALUE` strings.

    Raises:
      ConfigError: In one line, for an assignment that is not `KEY=VALUE`, a
        key assigned twice, or a value that is not YAML.

    Returns:
      Dict of each key to its value, read by `read_value`.
    """
    values = {}
    for assignment in assignments:
        key, equals, text = assignment.partition('=')
        key = key.strip()
        if not equals or not _KEY.fullmatch(key):
            raise ConfigError(
                f'--set {assignment!r} is not KEY=VALUE: pass a config key and its value, '
                f'such as --set steps=2e6.')
        if key in values:
            raise ConfigError(f'--set assigns {key} twice; pass each key once.')
        try:
            values[key] = read_value(text)
        except ruamel.yaml.YAMLError as error:
            raise ConfigError(
                f'--set {key}: cannot read {text!r} as a YAML value: '
                f'{describe_error(error)}') from None
    return values
