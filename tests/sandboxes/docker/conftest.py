"""Fixtures of the docker sandbox tests (see docker_support for the skip and the lifted check)."""

from tests.sandboxes.docker.docker_support import docker_engine, module_docker_engine

__all__ = ["docker_engine", "module_docker_engine"]
