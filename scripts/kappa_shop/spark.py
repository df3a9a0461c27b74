"""A SparkSession configured exactly like the `local` dbt target.

The settings live in one place, profiles.yml (`server_side_parameters` of the `local`
output). Our own Spark jobs (ingestion) read them from there, so that the same process can run
ingestion and then dbt: dbt-spark's `getOrCreate()` finds the session already running with the
same metastore, warehouse and settings, and Spark starts once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
import yaml

from kappa_shop.errors import KappaShopError

PROFILE_NAME = "kappa_shop"


def _render(text: str) -> str:
    """Render the profile's Jinja the way dbt does for the functions profiles.yml uses."""

    def env_var(name: str, default: str | None = None) -> str:
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise KappaShopError(f"profiles.yml needs the environment variable {name}")
        return default

    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters["as_number"] = lambda value: value
    return environment.from_string(text).render(env_var=env_var)


def profile_output(profiles_dir: Path, target: str) -> dict[str, Any]:
    """The rendered settings of one output (target) of the project's dbt profile."""
    path = profiles_dir / "profiles.yml"
    if not path.is_file():
        raise KappaShopError(f"no profiles.yml in {profiles_dir} (DBT_PROFILES_DIR)")
    profile = yaml.safe_load(_render(path.read_text()))[PROFILE_NAME]
    outputs = profile["outputs"]
    if target not in outputs:
        raise KappaShopError(
            f"unknown target {target!r}: profiles.yml defines {', '.join(sorted(outputs))}"
        )
    return outputs[target]


def default_target(profiles_dir: Path) -> str:
    """The profile's default target (KAPPA_SHOP_TARGET, else `local`)."""
    path = profiles_dir / "profiles.yml"
    return str(yaml.safe_load(_render(path.read_text()))[PROFILE_NAME]["target"])


def session_for(profiles_dir: Path, target: str):  # noqa: ANN201 (pyspark imports lazily)
    """Start (or reuse) the SparkSession of a `method: session` target."""
    output = profile_output(profiles_dir, target)
    if output.get("method") != "session":
        raise KappaShopError(
            f"target {target!r} uses method {output.get('method')!r}; this job needs an "
            "embedded Spark session (method: session), such as the `local` target"
        )
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in output.get("server_side_parameters", {}).items():
        builder = builder.config(str(key), str(value))
    builder = builder.config("spark.sql.ansi.enabled", "false")  # as dbt-spark forces it
    return builder.getOrCreate()
