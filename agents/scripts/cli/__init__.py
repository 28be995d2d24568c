"""What the commands share on the command line: flags, config names, signals, progress, logs.

Also the YAML of config values, in `config.yaml` and in `--set`. None of these
modules imports TensorFlow, so a command checks its flags, its config name and
its `--set` before TensorFlow loads.
"""
