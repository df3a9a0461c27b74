"""The class-data sharing archive of Spark's classes (kappa_shop.class_archive, written by
`make setup`): a Spark started as the `local` target starts it maps its classes from the
archive, and a JVM that cannot use an archive starts as usual without a word about it."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from conftest import copy_project, run_in

# A Spark session of the `local` target started in the project copy (the cwd), with the JVM
# logging where each class came from to argv[1]; one statement, then the log is complete
# enough to count; and what archive_status (`kappa-shop check`) makes of the running JVM.
PROBE = """
import sys
from pathlib import Path
from kappa_shop.class_archive import archive_status
from kappa_shop.spark import profile_output, session_for_output
output = profile_output(Path.cwd(), "local")
settings = output["server_side_parameters"]
settings["spark.driver.extraJavaOptions"] += f" -Xlog:class+load=info:file={sys.argv[1]}"
spark = session_for_output(output, "local")
print("rows", spark.sql("select count(*) as n from range(5)").collect()[0]["n"])
print("status", *archive_status(spark))
"""


def _classes_by_source(log: Path) -> dict[str, int]:
    """How many classes the JVM loaded from the dynamic archive ("top"), from the JDK's own
    archive and from jar files, by its class+load log."""
    counts = {"archive": 0, "jdk archive": 0, "jar": 0}
    for line in log.read_text().splitlines():
        if "source: shared objects file (top)" in line:
            counts["archive"] += 1
        elif "source: shared objects file" in line:
            counts["jdk archive"] += 1
        elif re.search(r"source: (jar:)?file:.*\.jar", line):
            counts["jar"] += 1
    return counts


def test_spark_maps_its_classes_from_the_archive_setup_wrote(tmp_path):
    archive = os.environ.get("KAPPA_SHOP_CLASS_ARCHIVE")
    assert archive, "KAPPA_SHOP_CLASS_ARCHIVE is not set: run the suite with `make pytest`"
    assert Path(archive).is_file(), f"{archive} is missing: `make setup` writes it"
    # in a copy elsewhere: the archive must fit every project directory (SPARK_CONF_DIR, on
    # the class path, differs from the one it was written with)
    root = copy_project(tmp_path / "kappa_shop")
    log = tmp_path / "classes.log"

    result = run_in(root, [sys.executable, "-c", PROBE, str(log)], timeout=300)

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "rows 5" in result.stdout
    counts = _classes_by_source(log)
    # Spark's classes came from the archive, few from the jars themselves
    assert counts["archive"] > 5000, counts
    assert counts["jar"] < counts["archive"] / 4, counts
    # and the JVM's own report, which `kappa-shop check` reads, says so
    assert f"status {archive} True" in result.stdout, result.stdout


def test_a_jvm_that_cannot_use_the_archive_starts_as_usual_and_says_nothing(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")
    not_an_archive = tmp_path / "classes.jsa"
    not_an_archive.write_bytes(b"not a class archive" * 100)
    log = tmp_path / "classes.log"

    result = run_in(
        root,
        [sys.executable, "-c", PROBE, str(log)],
        timeout=300,
        KAPPA_SHOP_CLASS_ARCHIVE=str(not_an_archive),
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "rows 5" in result.stdout
    assert _classes_by_source(log)["archive"] == 0
    assert f"status {not_an_archive} False" in result.stdout, result.stdout
    # nothing about the archive on stderr (tests elsewhere assert one-line errors)
    assert not re.search(r"cds|shared archive|archive", result.stderr, re.I), result.stderr
