"""Installs the `agents` package: batched reinforcement learning and BatchPPO."""

import setuptools

setuptools.setup(
    name='agents',
    version='2.0.0',
    description=(
        'Efficient batched reinforcement learning in TensorFlow: '
        'process-parallel environments, in-graph stepping, and BatchPPO.'),
    long_description=open('README.md').read(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    packages=setuptools.find_packages(include=['agents', 'agents.*']),
    python_requires='>=3.10',
    install_requires=[
        # The tensorflow wheel runs on CPUs and, with the cuda extra's libraries,
        # on NVIDIA GPUs; tensorflow-cpu would force GPU users to uninstall it.
        'tensorflow>=2.16',
        # AutoresetMode, which VectorEnv declares, came with Gymnasium 1.1.
        'gymnasium>=1.1',
        'numpy',
        'cloudpickle',
        'ruamel.yaml',
        'absl-py',
        # The progress line of training.
        'tqdm',
        # Summaries are written for TensorBoard, and the plot command reads them back.
        'tensorboard',
        # Rendering and writing videos in visualize.py.
        'imageio',
        'imageio-ffmpeg',
        'pygame',
    ],
    extras_require={
        'mujoco': ['gymnasium[mujoco]>=1.0'],
        # CUDA and cuDNN as pip packages, for training on an NVIDIA GPU.
        'cuda': ['tensorflow[and-cuda]>=2.16'],
        # Box2D tasks such as LunarLander; gymnasium[box2d] would also install
        # pygame-ce, which overwrites the pygame package above.
        'box2d': ['box2d>=2.3.10'],
        'ray': ['ray>=2.10'],
        # The envpool backend: envpool's C++ pool steps the tasks it ships.
        'envpool': ['envpool>=1.2'],
        'plot': ['matplotlib'],
        # POPGym's memory tasks (the popgym configs and benchmark group).
        'popgym': ['popgym>=1.0.7'],
        # SB3VecEnv, the Stable-Baselines3 adapter of the batch environments.
        'sb3': ['stable-baselines3>=2.0'],
        # The tune command's studies: TPE sampling, pruning, storage in SQLite.
        'tune': ['optuna>=3'],
        # The suite includes the lint (agents/style_test.py), hence ruff.
        'test': [
            'pytest', 'pytest-xdist', 'ruff>=0.8', 'ray>=2.10', 'gymnasium[mujoco]>=1.0',
            'matplotlib', 'box2d>=2.3.10', 'stable-baselines3>=2.0', 'envpool>=1.2', 'optuna>=3',
            'rliable>=1.0', 'pandas<3', 'popgym>=1.0.7'],
        # sb3-contrib's RecurrentPPO is the recurrent peer of benchmarks/learning.py;
        # rliable gives the results page its interquartile means and intervals;
        # it needs arch<8, which fails to import beside pandas 3.
        'bench': [
            'matplotlib', 'gymnasium[mujoco]>=1.0', 'ray>=2.10', 'envpool>=1.2',
            'stable-baselines3>=2.0', 'sb3-contrib>=2.0', 'rliable>=1.0', 'pandas<3',
            'popgym>=1.0.7'],
    },
    classifiers=[
        'Programming Language :: Python :: 3',
        'License :: OSI Approved :: Apache Software License',
        'Topic :: Scientific/Engineering :: Artificial Intelligence',
    ],
)
