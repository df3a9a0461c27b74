"""The embedded targets' local file system (java/, `fs.file.impl` in profiles.yml): Hadoop's
LocalFileSystem, with file permissions set through java.nio instead of a `chmod` process for
every file and directory Spark writes. It must leave every file exactly as Hadoop's own does."""

from __future__ import annotations

import os
import stat

import pytest

from kappa_shop.errors import KappaShopError
from kappa_shop.spark import check_class_path, local_file_system

OURS = "kappa_shop.hadoop.NioPermissionsLocalFileSystem"


def _modes(root) -> dict[str, str]:
    """Every file and directory under `root` with its permission bits (as `ls -l` shows them)."""
    return {
        os.path.relpath(os.path.join(directory, name), root): stat.filemode(
            os.stat(os.path.join(directory, name)).st_mode
        )
        for directory, directories, files in os.walk(root)
        for name in directories + files
    }


def test_the_embedded_session_writes_through_the_project_file_system(spark):
    # `make setup` builds the jar and the Makefile exports its path for every command
    jar = os.environ.get("KAPPA_SHOP_HADOOP_JAR")
    assert jar, "KAPPA_SHOP_HADOOP_JAR is not set: run the suite with `make pytest`"
    assert os.path.isfile(jar), jar
    assert local_file_system(spark) == OURS


def test_files_get_the_permissions_hadoop_gives_them(spark, tmp_path):
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    uri = jvm.java.net.URI("file:///")
    ours = jvm.org.apache.hadoop.fs.FileSystem.get(uri, configuration)
    hadoops = jvm.org.apache.hadoop.fs.LocalFileSystem()
    hadoops.initialize(uri, configuration)
    assert ours.getClass().getName() == OURS
    observed = {}
    for name, file_system in (("ours", ours), ("hadoops", hadoops)):
        root = tmp_path / name
        path = jvm.org.apache.hadoop.fs.Path(str(root / "day=2024-03-01" / "part-0.parquet"))
        stream = file_system.create(path)  # creates the directories, the file and its checksum
        stream.write(b"rows")
        stream.close()
        created = _modes(root)
        changed = []
        for mode in ("-rw-r-----", "-rwx--x--x", "-rw-------", "-rwxrwxrwx", "----------"):
            file_system.setPermission(
                path, jvm.org.apache.hadoop.fs.permission.FsPermission.valueOf(mode)
            )
            changed.append(_modes(root)["day=2024-03-01/part-0.parquet"])
        observed[name] = (created, changed)
    assert observed["ours"] == observed["hadoops"]
    created, changed = observed["ours"]
    assert created["day=2024-03-01"] == "drwxr-xr-x", created
    assert created["day=2024-03-01/part-0.parquet"] == "-rw-r--r--", created
    assert created["day=2024-03-01/.part-0.parquet.crc"] == "-rw-r--r--", created
    assert changed == ["-rw-r-----", "-rwx--x--x", "-rw-------", "-rwxrwxrwx", "----------"]


def test_a_table_written_by_spark_gets_the_usual_permissions(spark, tmp_path):
    location = tmp_path / "events"
    spark.sql("select id, cast(id % 3 as int) as day from range(30)").write.partitionBy(
        "day"
    ).parquet(str(location))
    modes = _modes(location)
    assert {
        mode for name, mode in modes.items() if not name.endswith(("crc", ".parquet", "_SUCCESS"))
    } == {"drwxr-xr-x"}, modes
    assert len([name for name in modes if name.endswith(".parquet")]) >= 3, modes
    assert {mode for name, mode in modes.items() if name.endswith((".parquet", "_SUCCESS"))} == {
        "-rw-r--r--"
    }, modes
    assert spark.read.parquet(str(location)).count() == 30


def test_a_missing_jar_is_named_before_spark_starts(tmp_path):
    missing = tmp_path / "kappa-shop-hadoop.jar"
    with pytest.raises(KappaShopError, match="make setup"):
        check_class_path(str(missing), "local")
    missing.write_bytes(b"")
    check_class_path(str(missing), "local")  # there: no error
    check_class_path("", "local")  # nothing on the class path: Hadoop's own file system
