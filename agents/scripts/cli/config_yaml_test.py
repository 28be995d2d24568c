import pytest

from agents.scripts.cli import config_yaml
from agents.tools.schema import ConfigError


@pytest.mark.parametrize('text, value', [
    ('2e6', 2e6),
    ('1e-4', 1e-4),
    ('.5e3', 500.0),  # A string to YAML 1.2; a number here.
    ('1000', 1000),
    ("'2e6'", '2e6'),  # Quoted: a string.
    ('popgym:popgym-RepeatPreviousEasy-v0', 'popgym:popgym-RepeatPreviousEasy-v0'),
    ('[64, 64]', [64, 64]),
    ('{include_cfrc_ext_in_observation: false}', {'include_cfrc_ext_in_observation': False}),
    ('null', None),
    ('', None),
    ('true', True),
    ('.inf', float('inf')),
    ('inf', 'inf'),
])
def test_values_read_as_yaml_and_decimal_numbers_as_numbers(text, value):
    read = config_yaml.read_value(text)
    assert read == value and type(read) is type(value)


def test_assignments_map_keys_to_values():
    assert config_yaml.read_assignments(
        ['steps=2e6', 'env=popgym:popgym-RepeatPreviousEasy-v0', 'seed = 3', 'x=a=b']) == dict(
        steps=2e6, env='popgym:popgym-RepeatPreviousEasy-v0', seed=3, x='a=b')
    assert config_yaml.read_assignments([]) == {}


def test_a_tagged_value_is_kept_to_be_refused():
    value = config_yaml.read_value('!!python/object/apply:os.system ["true"]')
    assert isinstance(value, config_yaml.Tagged) and 'os.system' in repr(value)


@pytest.mark.parametrize('assignments, message', [
    (['steps'], "--set 'steps' is not KEY=VALUE: pass a config key and its value, such as "
                '--set steps=2e6.'),
    (['=3'], "--set '=3' is not KEY=VALUE"),
    (['policy layers=[64]'], "--set 'policy layers=[64]' is not KEY=VALUE"),
    (['steps=1', 'steps=2'], '--set assigns steps twice; pass each key once.'),
    (['policy_layers=[64'], "--set policy_layers: cannot read '[64' as a YAML value: "),
])
def test_bad_assignments_are_refused_in_one_line(assignments, message):
    with pytest.raises(ConfigError) as error:
        config_yaml.read_assignments(assignments)
    assert str(error.value).startswith(message) and '\n' not in str(error.value)
