"""What the commands share on the command line: flags, config names, signals, progress, logs.

None of these modules imports TensorFlow, so a command checks its flags and
its config name before TensorFlow loads.
"""
