"""What the benchmark scripts share, one module per job.

Scripts in `benchmarks/` import it as `lib` (Python puts a script's own
directory first on the module path); the probes, run as
`python -m benchmarks.probes.<probe>`, as `benchmarks.lib`. Its modules import
each other relatively, so either name works.
"""
