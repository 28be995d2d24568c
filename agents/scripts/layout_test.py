"""The shape of agents: what sits at the top of agents/scripts, and imports that point down.

The import graph has no cycle, and the model (`agents/algorithms`,
`agents/parts`) and the tools know nothing of the commands.
"""

import ast
import os
import subprocess
import sys

AGENTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(AGENTS, 'scripts')
COMMANDS = {'train', 'visualize', 'plot', 'export', 'tune'}
# The original's modules, what a config names, and the run API the commands share.
TOP_LEVEL = {
    'configs', 'networks', 'utility', 'config_schema', 'registry', 'environments', 'run_api'}
SUBPACKAGES = {'cli', 'tuning', 'serving', 'plotting'}
# Packages below the commands: they import nothing of agents.scripts.
BELOW_SCRIPTS = ('agents.algorithms', 'agents.parts', 'agents.tools')


def _modules():
    """Dict of the name of each module of agents, tests left out, to its file."""
    modules = {}
    for directory, _, names in os.walk(AGENTS):
        for name in names:
            if name.endswith('.py') and not name.endswith('_test.py') and name != 'conftest.py':
                path = os.path.join(directory, name)
                module = os.path.relpath(path[:-3], os.path.dirname(AGENTS)).replace(os.sep, '.')
                modules[module.removesuffix('.__init__')] = path
    return modules


def _imports(modules):
    """Dict of each module to the modules of agents it imports, inside functions too."""
    graph = {}
    for module, path in modules.items():
        with open(path) as file_:
            tree = ast.parse(file_.read())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.update(
                    f'{node.module}.{alias.name}' if f'{node.module}.{alias.name}' in modules
                    else node.module for alias in node.names)
        graph[module] = {each for each in imported if each in modules and each != module}
    return graph


def _cycle(graph):
    """A list of modules that import each other in a circle, or None."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return None
        path.append(module)
        for each in sorted(graph[module]):
            found = visit(each)
            if found:
                return found
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module)
        if found:
            return found
    return None


def test_the_top_level_holds_the_commands_the_original_modules_and_role_subpackages():
    names = {
        name.removesuffix('.py') for name in os.listdir(SCRIPTS)
        if not name.startswith(('_', '.')) and not name.endswith('_test.py')}
    assert names == COMMANDS | TOP_LEVEL | SUBPACKAGES


def test_imports_form_no_cycle_and_internals_import_no_command():
    graph = _imports(_modules())
    assert _cycle(graph) is None, ' -> '.join(_cycle(graph))
    commands = {f'agents.scripts.{name}' for name in COMMANDS}
    importing = {
        module: sorted(graph[module] & commands) for module in graph
        if module.startswith('agents.scripts.') and module not in commands
        and graph[module] & commands}
    # The tuning worker trains each trial's runs as the train command does.
    assert importing == {'agents.scripts.tuning.worker': ['agents.scripts.train']}


def test_the_model_and_the_tools_import_nothing_of_the_scripts():
    graph = _imports(_modules())
    upward = {
        module: sorted(each for each in imported if each.startswith('agents.scripts'))
        for module, imported in graph.items() if module.startswith(BELOW_SCRIPTS)}
    assert {module: imported for module, imported in upward.items() if imported} == {}


def test_commands_the_tuning_worker_and_cli_load_no_tensorflow_when_imported():
    # They check flags first; environment workers import a command or the
    # tuning worker as their main module.
    names = [f'agents.scripts.{name}' for name in sorted(COMMANDS)] + [
        module for module in sorted(_modules()) if module.startswith('agents.scripts.cli')] + [
        'agents.scripts.tuning.worker']
    result = subprocess.run(
        [sys.executable, '-c', f'import sys; import {", ".join(names)}; '
         'print("tensorflow" in sys.modules)'],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=os.path.dirname(AGENTS)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'False\n'


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _cycle({'a': {'b'}, 'b': set()}) is None
