package kappa_shop.metastore;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.apache.hadoop.hive.metastore.ObjectStore;
import org.apache.hadoop.hive.metastore.RawStore;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FileMetadataExprType;
import org.apache.hadoop.hive.metastore.api.Function;
import org.apache.hadoop.hive.metastore.api.Index;
import org.apache.hadoop.hive.metastore.api.InvalidInputException;
import org.apache.hadoop.hive.metastore.api.InvalidObjectException;
import org.apache.hadoop.hive.metastore.api.InvalidPartitionException;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.PartitionEventType;
import org.apache.hadoop.hive.metastore.api.PrincipalType;
import org.apache.hadoop.hive.metastore.api.PrivilegeBag;
import org.apache.hadoop.hive.metastore.api.Role;
import org.apache.hadoop.hive.metastore.api.SQLForeignKey;
import org.apache.hadoop.hive.metastore.api.SQLPrimaryKey;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.Type;
import org.apache.hadoop.hive.metastore.api.UnknownPartitionException;
import org.apache.hadoop.hive.metastore.api.UnknownTableException;
import org.apache.hadoop.hive.metastore.partition.spec.PartitionSpecProxy;

/**
 * The embedded Hive metastore's store (`hive.metastore.rawstore.impl`, profiles.yml): Hive's
 * ObjectStore with its table and database look-ups kept in memory between changes.
 *
 * <p>Why: Spark asks the metastore for a table many times per statement (resolving it, checking
 * it exists, writing it, refreshing it: 17 look-ups of the target of one `insert into`), about
 * 2,700 look-ups in an incremental run of the project's models, each a dozen DataNucleus
 * queries against Derby: 4.5 ms on average, 12 s of a run's statement threads at 1M events
 * (README, "Why a jar of our own"). Between two changes the answer does not change.
 *
 * <p>Why it stays right: the embedded metastore lives in this one JVM (Derby admits one process),
 * so every change goes through this class. Every method of RawStore that can change anything
 * (all but the look-ups, `get*`, `list*`, `is*` and the few in {@link #READS}) is overridden
 * here to empty both caches before and after it and again when its transaction ends; a
 * look-up is served from the cache only while no change is under way, and its answer is kept
 * only if no change began or ended while it was read (a generation number, compared under the
 * same lock that empties the caches). Cached objects are deep copies, in and out. Missing
 * tables are not cached. When a RawStore method is neither a look-up nor overridden here (a
 * Hive that gained a method), the cache turns itself off and says so on stderr: see
 * {@link #unclassifiedMethods()}.
 */
public class CachingObjectStore extends ObjectStore {

  /** RawStore methods that change nothing and are not named get*, list* or is*. */
  static final Set<String> READS =
      new HashSet<>(
          Arrays.asList(
              "doesPartitionExist",
              "verifySchema",
              "openTransaction",
              "commitTransaction",
              "rollbackTransaction",
              "shutdown",
              "setConf",
              "getConf"));

  private static final Object LOCK = new Object();
  private static final Map<String, Table> TABLES = new ConcurrentHashMap<>();
  private static final Map<String, Database> DATABASES = new ConcurrentHashMap<>();
  private static final AtomicLong GENERATION = new AtomicLong();
  private static final AtomicInteger CHANGES_UNDER_WAY = new AtomicInteger();
  private static final AtomicLong HITS = new AtomicLong();
  private static final AtomicLong MISSES = new AtomicLong();
  private static final List<String> UNCLASSIFIED = findUnclassified();
  private static final boolean ENABLED = UNCLASSIFIED.isEmpty();

  static {
    if (!ENABLED) {
      System.err.println(
          "kappa_shop.metastore.CachingObjectStore: caching off, RawStore methods neither"
              + " look-ups nor overridden: "
              + UNCLASSIFIED);
    }
  }

  /** Whether this store (its instance, one per metastore thread) has a change under way. */
  private boolean changing;

  /**
   * RawStore's methods that are neither look-ups nor overridden here; the cache is on only when
   * there are none (tests/pytest/test_metastore_cache.py checks there are none).
   */
  public static List<String> unclassifiedMethods() {
    return new ArrayList<>(UNCLASSIFIED);
  }

  /** Whether look-ups are cached (every RawStore method classified). */
  public static boolean enabled() {
    return ENABLED;
  }

  /** Table and database look-ups answered from the cache since the JVM started. */
  public static long hits() {
    return HITS.get();
  }

  /** Table and database look-ups that went to the metastore's database. */
  public static long misses() {
    return MISSES.get();
  }

  private static List<String> findUnclassified() {
    List<String> missing = new ArrayList<>();
    for (Method method : RawStore.class.getMethods()) {
      String name = method.getName();
      if (name.startsWith("get")
          || name.startsWith("list")
          || name.startsWith("is")
          || READS.contains(name)) {
        continue;
      }
      try {
        Method own = CachingObjectStore.class.getMethod(name, method.getParameterTypes());
        if (own.getDeclaringClass() != CachingObjectStore.class
            || Modifier.isAbstract(own.getModifiers())) {
          missing.add(name);
        }
      } catch (NoSuchMethodException e) {
        missing.add(name);
      }
    }
    missing.sort(null);
    return missing;
  }

  private static void forget() {
    synchronized (LOCK) {
      GENERATION.incrementAndGet();
      TABLES.clear();
      DATABASES.clear();
    }
  }

  /** A call of the store's own method, which may throw what that method declares. */
  private interface Body<T> {
    T run() throws Exception;
  }

  @Override
  public Table getTable(String database, String table) throws MetaException {
    if (!ENABLED) {
      return super.getTable(database, table);
    }
    String key = (database + "." + table).toLowerCase();
    return lookUp(TABLES, key, () -> super.getTable(database, table), Table::new);
  }

  @Override
  public Database getDatabase(String name) throws NoSuchObjectException {
    if (!ENABLED) {
      return super.getDatabase(name);
    }
    return lookUp(DATABASES, name.toLowerCase(), () -> super.getDatabase(name), Database::new);
  }

  /**
   * A look-up: from `cache` while no change is under way, else from the database, keeping a
   * copy of what it found only if no change began or ended meanwhile.
   */
  private <T> T lookUp(Map<String, T> cache, String key, Body<T> read, UnaryOperator<T> copy) {
    if (CHANGES_UNDER_WAY.get() == 0) {
      T cached = cache.get(key);
      if (cached != null && CHANGES_UNDER_WAY.get() == 0) {
        HITS.incrementAndGet();
        return copy.apply(cached);
      }
    }
    MISSES.incrementAndGet();
    long generation = GENERATION.get();
    T found;
    try {
      found = read.run();
    } catch (Exception e) {
      throw CachingObjectStore.<RuntimeException>rethrow(e);
    }
    if (found != null && !isActiveTransaction()) {
      synchronized (LOCK) {
        if (CHANGES_UNDER_WAY.get() == 0 && GENERATION.get() == generation) {
          cache.put(key, copy.apply(found));
        }
      }
    }
    return found;
  }

  // --- changes: each empties the caches before and after, and again when its transaction ends

  /** A change: no look-up is served from or kept in the cache until its transaction ends. */
  private <T> T change(Body<T> body) {
    if (!changing) {
      changing = true;
      CHANGES_UNDER_WAY.incrementAndGet();
    }
    forget();
    try {
      return body.run();
    } catch (Exception e) {
      throw CachingObjectStore.<RuntimeException>rethrow(e);
    } finally {
      forget();
      settle();
    }
  }

  /** A call of the store's own method that returns nothing. */
  private interface VoidBody {
    void run() throws Exception;
  }

  /** A change that returns nothing. */
  private void changeVoid(VoidBody body) {
    change(
        () -> {
          body.run();
          return null;
        });
  }

  /** After a change, once no transaction of this store is open: the change is over. */
  private void settle() {
    if (changing && !isActiveTransaction()) {
      forget();
      changing = false;
      CHANGES_UNDER_WAY.decrementAndGet();
    }
  }

  /** Rethrows a checked exception unchanged (the overridden method declares it). */
  @SuppressWarnings("unchecked")
  private static <E extends Exception> E rethrow(Exception e) throws E {
    throw (E) e;
  }

  @Override
  public boolean commitTransaction() {
    try {
      return super.commitTransaction();
    } finally {
      settle();
    }
  }

  @Override
  public void rollbackTransaction() {
    try {
      super.rollbackTransaction();
    } finally {
      settle();
    }
  }

  @Override
  public void shutdown() {
    try {
      super.shutdown();
    } finally {
      if (changing) {
        forget();
        changing = false;
        CHANGES_UNDER_WAY.decrementAndGet();
      }
    }
  }

  @Override
  public void flushCache() {
    changeVoid(() -> super.flushCache());
  }

  @Override
  public void createDatabase(Database db) throws InvalidObjectException, MetaException {
    changeVoid(() -> super.createDatabase(db));
  }

  @Override
  public boolean dropDatabase(String name) throws NoSuchObjectException, MetaException {
    return change(() -> super.dropDatabase(name));
  }

  @Override
  public boolean alterDatabase(String name, Database db)
      throws NoSuchObjectException, MetaException {
    return change(() -> super.alterDatabase(name, db));
  }

  @Override
  public boolean createType(Type type) {
    return change(() -> super.createType(type));
  }

  @Override
  public boolean dropType(String name) {
    return change(() -> super.dropType(name));
  }

  @Override
  public void createTable(Table table) throws InvalidObjectException, MetaException {
    changeVoid(() -> super.createTable(table));
  }

  @Override
  public void createTableWithConstraints(
      Table table, List<SQLPrimaryKey> primaryKeys, List<SQLForeignKey> foreignKeys)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.createTableWithConstraints(table, primaryKeys, foreignKeys));
  }

  @Override
  public boolean dropTable(String database, String table)
      throws MetaException, NoSuchObjectException, InvalidObjectException, InvalidInputException {
    return change(() -> super.dropTable(database, table));
  }

  @Override
  public void alterTable(String database, String table, Table newTable)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.alterTable(database, table, newTable));
  }

  @Override
  public long updateParameterWithExpectedValue(
      Table table, String key, String expected, String newValue)
      throws MetaException, NoSuchObjectException {
    return change(() -> super.updateParameterWithExpectedValue(table, key, expected, newValue));
  }

  @Override
  public boolean addPartition(Partition partition) throws InvalidObjectException, MetaException {
    return change(() -> super.addPartition(partition));
  }

  @Override
  public boolean addPartitions(String database, String table, List<Partition> partitions)
      throws InvalidObjectException, MetaException {
    return change(() -> super.addPartitions(database, table, partitions));
  }

  @Override
  public boolean addPartitions(
      String database, String table, PartitionSpecProxy partitions, boolean ifNotExists)
      throws InvalidObjectException, MetaException {
    return change(() -> super.addPartitions(database, table, partitions, ifNotExists));
  }

  @Override
  public boolean dropPartition(String database, String table, List<String> values)
      throws MetaException, NoSuchObjectException, InvalidObjectException, InvalidInputException {
    return change(() -> super.dropPartition(database, table, values));
  }

  @Override
  public void dropPartitions(String database, String table, List<String> names)
      throws MetaException, NoSuchObjectException {
    changeVoid(() -> super.dropPartitions(database, table, names));
  }

  @Override
  public void alterPartition(String database, String table, List<String> values, Partition partition)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.alterPartition(database, table, values, partition));
  }

  @Override
  public void alterPartitions(
      String database, String table, List<List<String>> values, List<Partition> partitions)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.alterPartitions(database, table, values, partitions));
  }

  @Override
  public Table markPartitionForEvent(
      String database, String table, Map<String, String> partition, PartitionEventType event)
      throws MetaException, UnknownTableException, InvalidPartitionException,
          UnknownPartitionException {
    return change(() -> super.markPartitionForEvent(database, table, partition, event));
  }

  @Override
  public boolean addIndex(Index index) throws InvalidObjectException, MetaException {
    return change(() -> super.addIndex(index));
  }

  @Override
  public boolean dropIndex(String database, String table, String index) throws MetaException {
    return change(() -> super.dropIndex(database, table, index));
  }

  @Override
  public void alterIndex(String database, String table, String index, Index newIndex)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.alterIndex(database, table, index, newIndex));
  }

  @Override
  public boolean updateTableColumnStatistics(ColumnStatistics statistics)
      throws NoSuchObjectException, MetaException, InvalidObjectException, InvalidInputException {
    return change(() -> super.updateTableColumnStatistics(statistics));
  }

  @Override
  public boolean updatePartitionColumnStatistics(ColumnStatistics statistics, List<String> values)
      throws NoSuchObjectException, MetaException, InvalidObjectException, InvalidInputException {
    return change(() -> super.updatePartitionColumnStatistics(statistics, values));
  }

  @Override
  public boolean deletePartitionColumnStatistics(
      String database, String table, String partition, List<String> values, String column)
      throws NoSuchObjectException, MetaException, InvalidObjectException, InvalidInputException {
    return change(
        () -> super.deletePartitionColumnStatistics(database, table, partition, values, column));
  }

  @Override
  public boolean deleteTableColumnStatistics(String database, String table, String column)
      throws NoSuchObjectException, MetaException, InvalidObjectException, InvalidInputException {
    return change(() -> super.deleteTableColumnStatistics(database, table, column));
  }

  @Override
  public boolean addRole(String role, String owner)
      throws InvalidObjectException, MetaException, NoSuchObjectException {
    return change(() -> super.addRole(role, owner));
  }

  @Override
  public boolean removeRole(String role) throws MetaException, NoSuchObjectException {
    return change(() -> super.removeRole(role));
  }

  @Override
  public boolean grantRole(
      Role role,
      String user,
      PrincipalType principalType,
      String grantor,
      PrincipalType grantorType,
      boolean grantOption)
      throws MetaException, NoSuchObjectException, InvalidObjectException {
    return change(
        () -> super.grantRole(role, user, principalType, grantor, grantorType, grantOption));
  }

  @Override
  public boolean revokeRole(Role role, String user, PrincipalType principalType, boolean grantOption)
      throws MetaException, NoSuchObjectException {
    return change(() -> super.revokeRole(role, user, principalType, grantOption));
  }

  @Override
  public boolean grantPrivileges(PrivilegeBag privileges)
      throws InvalidObjectException, MetaException, NoSuchObjectException {
    return change(() -> super.grantPrivileges(privileges));
  }

  @Override
  public boolean revokePrivileges(PrivilegeBag privileges, boolean grantOption)
      throws InvalidObjectException, MetaException, NoSuchObjectException {
    return change(() -> super.revokePrivileges(privileges, grantOption));
  }

  @Override
  public long cleanupEvents() {
    return change(() -> super.cleanupEvents());
  }

  @Override
  public boolean addToken(String identifier, String token) {
    return change(() -> super.addToken(identifier, token));
  }

  @Override
  public boolean removeToken(String identifier) {
    return change(() -> super.removeToken(identifier));
  }

  @Override
  public int addMasterKey(String key) throws MetaException {
    return change(() -> super.addMasterKey(key));
  }

  @Override
  public void updateMasterKey(Integer sequence, String key)
      throws NoSuchObjectException, MetaException {
    changeVoid(() -> super.updateMasterKey(sequence, key));
  }

  @Override
  public boolean removeMasterKey(Integer sequence) {
    return change(() -> super.removeMasterKey(sequence));
  }

  @Override
  public void setMetaStoreSchemaVersion(String version, String comment) throws MetaException {
    changeVoid(() -> super.setMetaStoreSchemaVersion(version, comment));
  }

  @Override
  public void createFunction(Function function) throws InvalidObjectException, MetaException {
    changeVoid(() -> super.createFunction(function));
  }

  @Override
  public void alterFunction(String database, String name, Function function)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.alterFunction(database, name, function));
  }

  @Override
  public void dropFunction(String database, String name)
      throws MetaException, NoSuchObjectException, InvalidObjectException, InvalidInputException {
    changeVoid(() -> super.dropFunction(database, name));
  }

  @Override
  public void addNotificationEvent(NotificationEvent event) {
    changeVoid(() -> super.addNotificationEvent(event));
  }

  @Override
  public void cleanNotificationEvents(int olderThan) {
    changeVoid(() -> super.cleanNotificationEvents(olderThan));
  }

  @Override
  public void putFileMetadata(
      List<Long> fileIds, List<ByteBuffer> metadata, FileMetadataExprType type) {
    changeVoid(() -> super.putFileMetadata(fileIds, metadata, type));
  }

  @Override
  public void dropConstraint(String database, String table, String constraint)
      throws NoSuchObjectException {
    changeVoid(() -> super.dropConstraint(database, table, constraint));
  }

  @Override
  public void addPrimaryKeys(List<SQLPrimaryKey> primaryKeys)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.addPrimaryKeys(primaryKeys));
  }

  @Override
  public void addForeignKeys(List<SQLForeignKey> foreignKeys)
      throws InvalidObjectException, MetaException {
    changeVoid(() -> super.addForeignKeys(foreignKeys));
  }
}
