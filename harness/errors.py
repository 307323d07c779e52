"""Exceptions raised where a problem is found and reported once, at the edge."""


class HarnessError(Exception):
    """Base class: the message says what was expected, what was found, and
    what to do about it."""


class ConfigError(HarnessError):
    """matrix.yaml or a Kconfig fragment is wrong."""


class BuildError(HarnessError):
    """Extracting, patching, configuring or compiling failed."""


class DependencyError(HarnessError):
    """A host tool or package is missing."""


class BootError(HarnessError):
    """QEMU could not be started at all (not: the guest failed)."""
