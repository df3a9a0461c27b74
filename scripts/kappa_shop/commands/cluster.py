"""`kappa-shop cluster`: start, stop or show a Spark cluster with a Thrift Server on 127.0.0.1."""

from __future__ import annotations

import argparse
import os

from kappa_shop.commands.common import Subcommands, add_up_down_status, open_project


def register(commands: Subcommands) -> None:
    cluster = commands.add_parser(
        "cluster",
        help="start, stop or show a Spark cluster with a Thrift Server on 127.0.0.1",
        description=(
            "A Spark standalone master, two workers and a Spark Thrift Server on that master, "
            "from the pip install of PySpark, all bound to 127.0.0.1; state, logs and work "
            "directories in .cluster/. Ports come from the `cluster` target of profiles.yml "
            "(KAPPA_SHOP_THRIFT_PORT, KAPPA_SHOP_SPARK_MASTER), so dbt --target cluster and "
            "kappa-shop --target cluster reach it. `up` and `down` are safe to repeat."
        ),
    )
    add_up_down_status(cluster, "the cluster", "every process", 180.0)
    cluster.add_argument(
        "--ui-port",
        type=int,
        default=int(os.environ.get("KAPPA_SHOP_CLUSTER_UI_PORT", "8180")),
        help="web UI port of the master; the workers and the Thrift Server take the next three "
        "(default: KAPPA_SHOP_CLUSTER_UI_PORT or 8180)",
    )
    cluster.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ops import cluster
    from kappa_shop.runtime.spark import profile_output

    project = open_project(arguments)
    home = project.root / ".cluster"
    if arguments.action == "status":
        return 0 if cluster.status(home) else 1
    if arguments.action == "down":
        cluster.down(home, timeout=min(arguments.timeout, 60.0))
        return 0
    output = profile_output(project.profiles_dir, "cluster")
    settings = cluster.settings_from_profile(output, home, arguments.ui_port)
    print(f"Starting a Spark cluster on 127.0.0.1 (state and logs in {home})")
    cluster.up(settings, project.root / "conf", timeout=arguments.timeout)
    return 0
