"""The fast start (kappa_shop.runtime.fast_start, docs/fast-start.md): one opt-in, off by default.

Off, the embedded Spark is Spark as it comes: its default local file system, classes loaded
from the jars, and profiles.yml holds only Spark's own settings. On (PYSPARK_SUBMIT_ARGS naming
its properties file), the same Spark writes through the project's local file system, which
leaves every file exactly as Hadoop's own does, and maps its classes from the class archive;
a JVM that cannot use the archive starts as usual without a word about it.

The fast start these tests use is the one `make setup KAPPA_SHOP_FAST_START=1` built when the
run is opted in, else one they build themselves (the fixture fast_start_build)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, copy_project, run_in

from kappa_shop.errors import KappaShopError
from kappa_shop.runtime import fast_start
from kappa_shop.runtime.spark import profile_output

OURS = "kappa_shop.hadoop.NioPermissionsLocalFileSystem"
EMBEDDED_TARGETS = ("local", "local_delta")

# A Spark session of the `local` target started in the project copy (the cwd), the JVM logging
# where each class came from to argv[1]; a statement; what archive_status (`kappa-shop check`)
# makes of the running JVM; the file system of `file:` paths; and, when it is ours, the
# permissions it and Hadoop's own give the same files, and those of a table Spark writes
# (under argv[2]).
PROBE = """
import json, os, stat, sys
from pathlib import Path
from kappa_shop.runtime.class_archive import archive_status
from kappa_shop.runtime.spark import local_file_system, profile_output, session_for_output

def modes(root):
    return {
        os.path.relpath(os.path.join(directory, name), root):
            stat.filemode(os.stat(os.path.join(directory, name)).st_mode)
        for directory, directories, files in os.walk(root)
        for name in directories + files
    }

output = profile_output(Path.cwd(), "local")
settings = output["server_side_parameters"]
settings["spark.driver.extraJavaOptions"] += f" -Xlog:class+load=info:file={sys.argv[1]}"
spark = session_for_output(output, "local")
scratch = Path(sys.argv[2])
report = {
    "rows": spark.sql("select count(*) as n from range(5)").collect()[0]["n"],
    "archive": archive_status(spark),
    "file_system": local_file_system(spark),
}
if report["file_system"].startswith("kappa_shop."):
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    uri = jvm.java.net.URI("file:///")
    hadoops = jvm.org.apache.hadoop.fs.LocalFileSystem()
    hadoops.initialize(uri, configuration)
    for name, file_system in (("ours", jvm.org.apache.hadoop.fs.FileSystem.get(uri, configuration)),
                              ("hadoops", hadoops)):
        root = scratch / name
        path = jvm.org.apache.hadoop.fs.Path(str(root / "day=2024-03-01" / "part-0.parquet"))
        stream = file_system.create(path)  # the directories, the file and its checksum
        stream.write(b"rows")
        stream.close()
        created = modes(root)
        changed = []
        for mode in ("-rw-r-----", "-rwx--x--x", "-rw-------", "-rwxrwxrwx", "----------"):
            file_system.setPermission(
                path, jvm.org.apache.hadoop.fs.permission.FsPermission.valueOf(mode)
            )
            changed.append(modes(root)["day=2024-03-01/part-0.parquet"])
        report[name] = [created, changed]
    location = scratch / "events"
    spark.sql("select id, cast(id % 3 as int) as day from range(30)").write.partitionBy(
        "day"
    ).parquet(str(location))
    report["table"] = modes(location)
    report["table_rows"] = spark.read.parquet(str(location)).count()
print("PROBE " + json.dumps(report))
"""


def _probe(tmp_path: Path, **settings: str | None) -> tuple[dict, dict[str, int], str]:
    """PROBE in a copy of the project, with `settings` in its environment: its report, where
    the JVM's classes came from, and its stderr."""
    root = copy_project(tmp_path / "kappa_shop")
    log, scratch = tmp_path / "classes.log", tmp_path / "scratch"
    scratch.mkdir()
    result = run_in(
        root, [sys.executable, "-c", PROBE, str(log), str(scratch)], timeout=300, **settings
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE ")), _classes_by_source(log), result.stderr


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


def _on(directory: Path) -> dict[str, str]:
    return {"PYSPARK_SUBMIT_ARGS": fast_start.submit_args(directory)}


def test_the_embedded_targets_hold_only_sparks_own_settings():
    text = (REPO_ROOT / "profiles.yml").read_text()
    assert "{%" not in text
    outputs = yaml.safe_load(text)["kappa_shop"]["outputs"]
    for target in EMBEDDED_TARGETS:
        # Jinja only where dbt users know it: env_var for the schema and the driver's memory
        raw = json.dumps(outputs[target])
        assert set(re.findall(r"env_var\('(\w+)'", raw)) <= {
            "KAPPA_SHOP_SCHEMA",
            "KAPPA_SHOP_DRIVER_MEMORY",
        }, raw
        settings = profile_output(REPO_ROOT, target)["server_side_parameters"]
        assert not [key for key in settings if key.startswith("spark.hadoop.")], settings
        assert "spark.driver.extraClassPath" not in settings
        assert "kappa_shop." not in json.dumps(settings)
        assert "-XX:" not in settings["spark.driver.extraJavaOptions"]


@pytest.mark.spark
def test_off_spark_is_spark_as_it_comes(tmp_path):
    report, classes, _ = _probe(tmp_path, PYSPARK_SUBMIT_ARGS=None, KAPPA_SHOP_FAST_START=None)
    assert report["rows"] == 5
    # Spark's default for `file:` paths (in the PySpark wheel, Hive's ProxyLocalFileSystem over
    # Hadoop's LocalFileSystem)
    assert not report["file_system"].startswith("kappa_shop."), report
    assert report["archive"] == [None, None]
    assert classes["archive"] == 0, classes


def test_the_build_holds_the_jar_the_archive_and_the_properties(fast_start_build):
    properties = (fast_start_build / fast_start.PROPERTIES_NAME).read_text()
    settings = dict(
        line.split(" ", 1) for line in properties.splitlines() if not line.startswith("#")
    )
    jar, archive = (
        fast_start_build / fast_start.JAR_NAME,
        fast_start_build / fast_start.ARCHIVE_NAME,
    )
    assert settings == {
        "spark.driver.defaultExtraClassPath": f"{jar}:{fast_start.spark_jars()}/*",
        "spark.driver.defaultJavaOptions": f"-XX:SharedArchiveFile={archive} {fast_start.QUIET}",
        "spark.hadoop.fs.file.impl": OURS,
    }
    assert jar.stat().st_size > 0
    assert archive.stat().st_size > 50 * 2**20


def test_on_spark_writes_through_our_file_system_and_maps_the_archive(tmp_path, fast_start_build):
    report, classes, _ = _probe(tmp_path, **_on(fast_start_build))
    assert report["rows"] == 5
    assert report["file_system"] == OURS
    # the files as Hadoop's own file system leaves them, created and changed
    assert report["ours"] == report["hadoops"]
    created, changed = report["ours"]
    assert created["day=2024-03-01"] == "drwxr-xr-x", created
    assert created["day=2024-03-01/part-0.parquet"] == "-rw-r--r--", created
    assert created["day=2024-03-01/.part-0.parquet.crc"] == "-rw-r--r--", created
    assert changed == ["-rw-r-----", "-rwx--x--x", "-rw-------", "-rwxrwxrwx", "----------"]
    # a table Spark writes: the usual permissions
    table = report["table"]
    assert report["table_rows"] == 30
    assert len([name for name in table if name.endswith(".parquet")]) >= 3, table
    assert {
        mode for name, mode in table.items() if not name.endswith(("crc", ".parquet", "_SUCCESS"))
    } == {"drwxr-xr-x"}, table
    assert {mode for name, mode in table.items() if name.endswith((".parquet", "_SUCCESS"))} == {
        "-rw-r--r--"
    }, table
    # in a copy elsewhere (another SPARK_CONF_DIR on the class path than the archive was
    # written with), Spark's classes came from the archive, few from the jars themselves
    assert classes["archive"] > 5000, classes
    assert classes["jar"] < classes["archive"] / 4, classes
    # and the JVM's own report, which `kappa-shop check` reads, says so
    assert report["archive"] == [str(fast_start_build / fast_start.ARCHIVE_NAME), True]


def test_a_jvm_that_cannot_use_the_archive_starts_as_usual_and_says_nothing(
    tmp_path, fast_start_build
):
    not_an_archive = tmp_path / "classes.jsa"
    not_an_archive.write_bytes(b"not a class archive" * 100)
    properties = tmp_path / fast_start.PROPERTIES_NAME
    properties.write_text(
        (fast_start_build / fast_start.PROPERTIES_NAME)
        .read_text()
        .replace(str(fast_start_build / fast_start.ARCHIVE_NAME), str(not_an_archive))
    )

    report, classes, stderr = _probe(tmp_path, **_on(tmp_path))

    assert report["rows"] == 5
    assert report["file_system"] == OURS
    assert classes["archive"] == 0, classes
    assert report["archive"] == [str(not_an_archive), False]
    # nothing about the archive on stderr (tests elsewhere assert one-line errors)
    assert not re.search(r"cds|shared archive|archive", stderr, re.I), stderr


def test_kappa_shop_opted_in_without_a_build_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_start, "default_directory", lambda: tmp_path / "fast-start")
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.setenv("KAPPA_SHOP_FAST_START", "1")
    with pytest.raises(KappaShopError, match=r"make setup KAPPA_SHOP_FAST_START=1"):
        fast_start.apply_from_environment()
    # built: kappa-shop points PYSPARK_SUBMIT_ARGS at it
    (tmp_path / "fast-start").mkdir()
    (tmp_path / "fast-start" / fast_start.PROPERTIES_NAME).write_text("")
    fast_start.apply_from_environment()
    assert fast_start.PROPERTIES_NAME in os.environ["PYSPARK_SUBMIT_ARGS"]
    # off: nothing changes
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    monkeypatch.setenv("KAPPA_SHOP_FAST_START", "")
    fast_start.apply_from_environment()
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ


def test_a_clusters_spark_starts_without_the_fast_start(monkeypatch, tmp_path):
    ours = fast_start.submit_args(tmp_path)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", ours)
    with fast_start.left_out():
        assert "PYSPARK_SUBMIT_ARGS" not in os.environ
    assert os.environ["PYSPARK_SUBMIT_ARGS"] == ours
    # one's own arguments are one's own
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    with fast_start.left_out():
        assert os.environ["PYSPARK_SUBMIT_ARGS"] == "--driver-memory 2g pyspark-shell"


def test_make_sets_what_kappa_shop_sets_and_only_when_opted_in():
    def submit_args_under_make(*settings: str) -> str:
        show = 'show-submit-args: ; @echo "$$PYSPARK_SUBMIT_ARGS"'
        command = ["make", "-s", "--no-print-directory", "--eval", show, "show-submit-args"]
        result = run_in(
            REPO_ROOT,
            [*command, f"VENV={sys.prefix}", *settings],
            timeout=60,
            PYSPARK_SUBMIT_ARGS=None,
            KAPPA_SHOP_FAST_START=None,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert submit_args_under_make("KAPPA_SHOP_FAST_START=1") == fast_start.submit_args(
        fast_start.default_directory()
    )
    assert submit_args_under_make() == ""
    assert submit_args_under_make("KAPPA_SHOP_FAST_START=0") == ""
