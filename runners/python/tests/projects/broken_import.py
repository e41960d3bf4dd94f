import a_package_that_is_not_installed  # noqa: F401

graph = None
