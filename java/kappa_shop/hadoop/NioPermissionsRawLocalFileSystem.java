package kappa_shop.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, setting permissions through java.nio instead of a `chmod`
 * process. Without Hadoop's native library (which the PySpark wheel does not ship), every file
 * and directory Spark creates on the local disk (each data file, its checksum file, each
 * partition directory) forks `chmod`: about 10 ms each, thousands of times in a full refresh.
 * Everything else is RawLocalFileSystem's own.
 */
public class NioPermissionsRawLocalFileSystem extends RawLocalFileSystem {
  /** The permission bits of a mode, lowest first: others, group, owner (execute, write, read). */
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ,
  };

  /** The same mode `chmod` would set (the sticky bit aside, which Spark never sets). */
  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        permissions.add(BITS[bit]);
      }
    }
    Files.setPosixFilePermissions(pathToFile(path).toPath(), permissions);
  }
}
