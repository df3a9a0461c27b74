"""Building the fast start (docs/fast-start.md): `python -m kappa_shop.runtime.fast_start_build DIR`
(what `make setup KAPPA_SHOP_FAST_START=1` runs) compiles the jar, writes the class archive
and then the properties file that puts both to use (kappa_shop.runtime.fast_start says what each is
and how a Spark start finds them). Apart from fast_start, which every Spark start imports, so
that nothing it imports comes back to it."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime.class_archive import write_archive
from kappa_shop.runtime.environment import find_project_root
from kappa_shop.runtime.fast_start import (
    ARCHIVE_NAME,
    JAR_NAME,
    PROPERTIES_NAME,
    QUIET,
    default_directory,
    settings,
    spark_jars,
)


def compile_jar(directory: Path, sources: Path) -> Path:
    """Compile the `.java` files under `sources` against the wheel's jars into
    directory/JAR_NAME, with the JDK's javac."""
    javac = shutil.which("javac")
    if javac is None:
        raise KappaShopError(
            "the fast start compiles java/ with the JDK's javac, which is not on PATH "
            "(Debian: apt-get install openjdk-17-jdk-headless)"
        )
    files = sorted(str(path) for path in sources.rglob("*.java"))
    if not files:
        raise KappaShopError(f"no Java sources under {sources}")
    jar = directory / JAR_NAME
    with tempfile.TemporaryDirectory(prefix="kappa-shop-classes-") as classes:
        subprocess.run(
            [javac, "--release", "17", "-d", classes, "-cp", str(spark_jars() / "*"), *files],
            check=True,
        )
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(Path(classes).rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
    return jar


def build(directory: Path, project_root: Path, profiles_dir: Path) -> None:
    """Build the jar, the class archive and the properties file into `directory` (the
    properties file last: without it nothing uses the other two)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PROPERTIES_NAME).unlink(missing_ok=True)
    started = time.monotonic()
    jar = compile_jar(directory, project_root / "java" / "kappa_shop" / "hadoop")
    print(f"Built {jar} in {time.monotonic() - started:.0f} s")
    started = time.monotonic()
    archive = directory / ARCHIVE_NAME
    size = write_archive(archive, profiles_dir, settings(directory, ""))
    print(
        f"Wrote {archive} ({size / 2**20:,.0f} MiB of Spark's classes) in "
        f"{time.monotonic() - started:.0f} s"
    )
    lines = [
        "# The fast start (docs/fast-start.md), written by `make setup KAPPA_SHOP_FAST_START=1`;",
        "# used when PYSPARK_SUBMIT_ARGS names it: `--properties-file <this file> ...`.",
    ]
    options = f"-XX:SharedArchiveFile={archive} {QUIET}"
    lines += [f"{key} {value}" for key, value in settings(directory, options).items()]
    temporary = directory / f".{PROPERTIES_NAME}.tmp"
    temporary.write_text("\n".join(lines) + "\n")
    temporary.replace(directory / PROPERTIES_NAME)
    print(f"Wrote {directory / PROPERTIES_NAME}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "directory", type=Path, nargs="?", help="where to build (default: the virtualenv's)"
    )
    arguments = parser.parse_args()
    directory = (arguments.directory or default_directory()).resolve()
    project_root = find_project_root()
    profiles_dir = Path(os.environ.get("DBT_PROFILES_DIR", project_root))
    # the build starts its own Spark with the settings it needs, whatever is set around it
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    try:
        build(directory, project_root, profiles_dir)
    except KappaShopError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
