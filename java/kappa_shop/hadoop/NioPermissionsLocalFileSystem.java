package kappa_shop.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * The `file:` file system of the project's embedded Spark (`fs.file.impl`, profiles.yml):
 * Hadoop's LocalFileSystem (checksums included) over NioPermissionsRawLocalFileSystem.
 */
public class NioPermissionsLocalFileSystem extends LocalFileSystem {
  public NioPermissionsLocalFileSystem() {
    super(new NioPermissionsRawLocalFileSystem());
  }
}
