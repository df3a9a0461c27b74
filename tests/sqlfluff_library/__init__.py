"""Jinja functions for sqlfluff's jinja templater (`library_path` in .sqlfluff).

`var()` returns the project's real vars from dbt_project.yml instead of sqlfluff's placeholder,
so models and macros that loop over `log_streams` render for the linter as they do for dbt.
"""

from pathlib import Path
from typing import Any

import yaml

_PROJECT_VARS: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "dbt_project.yml").read_text()
)["vars"]


def var(name: str, default: Any = None) -> Any:
    """dbt's var(): the project's value, else the default."""
    return _PROJECT_VARS.get(name, default)
