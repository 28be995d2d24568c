"""The tune command's internals: the search space, the study on disk, its workers, its report."""
