"""Reading, setting and calling attributes of one environment, where it runs.

`BaseBatchEnv.apply(function, *args)` runs `function(env, *args)` on each
environment in the process that hosts it. The functions here are what the
batch's `call` and the Gymnasium and SB3 adapters run that way: module-level, so
workers import them by reference, and free of TensorFlow and SB3, so workers
stay lean. Names are looked up through Gymnasium wrappers, as Gymnasium's and
SB3's own vector environments look them up.
"""

import os

import gymnasium


def get_attribute(env, name):
    """The attribute `name` of an environment, looked up through its wrappers.

    Args:
      env: The environment.
      name: Attribute name; a dotted name reads attributes of attributes
        ('unwrapped.spec').

    Raises:
      AttributeError: If neither the environment nor its wrappers have it.
    """
    env = _user_env(env)
    first, *rest = name.split('.')
    if hasattr(env, 'get_wrapper_attr'):
        value = env.get_wrapper_attr(first)
    else:
        value = getattr(env, first)
    for part in rest:
        value = getattr(value, part)
    return value


def call_method(env, name, args, kwargs):
    """Call the method `name` of an environment, looked up through its wrappers."""
    return get_attribute(env, name)(*args, **kwargs)


def call_or_read(env, name, args, kwargs):
    """Call the attribute `name` if it is callable, else return its value.

    This is what Gymnasium's `VectorEnv.call` does for each environment.
    """
    value = get_attribute(env, name)
    return value(*args, **kwargs) if callable(value) else value


def set_attribute(env, name, value):
    """Set the attribute `name` on the wrapper or environment that has it.

    As Gymnasium's `set_wrapper_attr`: on the outermost wrapper if none has it.
    """
    env = _user_env(env)
    if hasattr(env, 'set_wrapper_attr'):
        env.set_wrapper_attr(name, value)
    else:
        setattr(env, name, value)


def set_outermost(env, name, value):
    """Set the attribute `name` on the outermost wrapper of an environment, as `setattr` would."""
    setattr(_user_env(env), name, value)


def is_wrapped(env, wrapper_name):
    """Whether one of an environment's wrappers is an instance of a class.

    The class is given by name so that checking for, say, SB3's `Monitor`
    does not import SB3 into a worker whose environment does not use it.
    Wrappers the adapters add themselves (see `_user_env`) do not count.

    Args:
      env: The environment.
      wrapper_name: Module and qualified name of the wrapper class, as
        `class_name` returns it.
    """
    env = _user_env(env)
    while isinstance(env, gymnasium.Wrapper):
        if any(class_name(base) == wrapper_name for base in type(env).__mro__):
            return True
        env = env.env
    return False


def class_name(cls):
    """The module and qualified name of a class, which `is_wrapped` takes."""
    return f'{cls.__module__}.{cls.__qualname__}'


def identity(env):
    """The process and object id of the innermost environment, to tell shared ones apart."""
    return os.getpid(), id(getattr(env, 'unwrapped', env))


def _user_env(env):
    """The environment as its constructor built it, inside the wrappers the adapters add.

    Those wrappers (marked `internal_wrapper`) are outermost; reading, setting
    and calling attributes, and checking for wrappers, start below them.
    """
    while getattr(type(env), 'internal_wrapper', False):
        env = env.env
    return env
