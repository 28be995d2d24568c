r"""How large and how slow is each way to install the package? Run by hand.

Installs the package into fresh virtual environments, one per install path,
and reports the download size, the download and install times, the size of
the environment's site-packages and its largest packages:

    python benchmarks/install_paths.py                   # CPU and CUDA paths
    python benchmarks/install_paths.py --paths=cpu       # one of them

Each path is downloaded first (`pip download`, no cache) and then installed
from the downloaded files only, so the two times are separate. Pip's
configuration files are ignored, so packages come from the public index as on
a fresh machine. Needs a few GB of disk for the CUDA path.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Name of each install path and the requirements it installs; the last two
# are the TensorFlow wheels alone, for comparison.
PATHS = {
    'cpu': ['-e', REPOSITORY],
    'cuda': ['-e', f'{REPOSITORY}[cuda]'],
    'tensorflow': ['tensorflow'],
    'tensorflow-cpu': ['tensorflow-cpu'],
}

CHECK = (
    'import tensorflow as tf, tensorboard; '
    'print("tensorflow", tf.__version__, "tensorboard", tensorboard.__version__, '
    '"GPUs", len(tf.config.list_physical_devices("GPU")))')


def measure(name, requirements, workdir):
    """Download and install one path into a fresh environment; return a result dict."""
    environment = os.path.join(workdir, name)
    wheels = os.path.join(workdir, f'{name}-wheels')
    venv.create(environment, with_pip=True)
    python = os.path.join(environment, 'bin', 'python')
    pip = [python, '-m', 'pip', '--disable-pip-version-check', '--no-cache-dir']
    environ = dict(os.environ, PIP_CONFIG_FILE=os.devnull, TF_CPP_MIN_LOG_LEVEL='2')
    start = time.time()
    # The editable install builds the package, which needs setuptools.
    downloads = [each for each in requirements if each != '-e'] + ['setuptools', 'wheel']
    subprocess.run(pip + ['download', '-d', wheels] + downloads, check=True,
                   env=environ, stdout=subprocess.DEVNULL)
    download_seconds = time.time() - start
    start = time.time()
    subprocess.run(pip + ['install', '--no-index', '--find-links', wheels] + requirements,
                   check=True, env=environ, stdout=subprocess.DEVNULL)
    install_seconds = time.time() - start
    check = subprocess.run([python, '-c', CHECK], capture_output=True, text=True, env=environ)
    (site_packages,) = glob.glob(os.path.join(environment, 'lib', 'python*', 'site-packages'))
    packages = {
        entry: _size(os.path.join(site_packages, entry)) for entry in os.listdir(site_packages)}
    return dict(
        name=name, download_mb=_size(wheels) / 1e6, download_seconds=download_seconds,
        install_seconds=install_seconds, installed_mb=_size(site_packages) / 1e6,
        largest=sorted(packages.items(), key=lambda item: -item[1])[:5],
        check=(check.stdout or check.stderr).strip().splitlines()[-1])


def _size(path):
    """Bytes in the files under `path`."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(
        os.path.getsize(os.path.join(directory, name))
        for directory, _, names in os.walk(path) for name in names
        if not os.path.islink(os.path.join(directory, name)))


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--paths', default=','.join(PATHS), help='Comma-separated paths.')
    args = parser.parse_args()
    print(f'Python {sys.version.split()[0]}, {sys.platform}\n')
    print('| install | download | download time | install time | installed | largest |')
    print('|---|---:|---:|---:|---:|---|')
    for name in args.paths.split(','):
        workdir = tempfile.mkdtemp(prefix=f'install-{name}-')
        try:
            result = measure(name, PATHS[name], workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        largest = ', '.join(f'{entry} {size / 1e6:.0f} MB' for entry, size in result['largest'])
        print(f'| {name} | {result["download_mb"]:,.0f} MB | {result["download_seconds"]:.0f} s '
              f'| {result["install_seconds"]:.0f} s | {result["installed_mb"]:,.0f} MB '
              f'| {largest} |', flush=True)
        print(f'<!-- {name}: {result["check"]} -->', flush=True)


if __name__ == '__main__':
    main()
