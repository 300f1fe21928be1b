import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The H2 load of bench/alloc_programs_bench.py (issue 28): an in-memory H2 database, N threads, each
 * inserting its share of the rows with a PreparedStatement in batches, then querying them: a point
 * lookup of every one of its rows by key, range sums over consecutive keys, and a few aggregates.
 * Every value is a function of the row's key, so the run is deterministic and the script checks the
 * checksums this prints (the formulas are repeated in the script). Prints its own elapsed time, so
 * the figure of the run can be compared with the process's wall time.
 *
 * Args: rows (default 40000) and threads (default 4); rows must be a multiple of threads.
 */
public class H2Load {
    static final String URL = "jdbc:h2:mem:load;DB_CLOSE_DELAY=-1";
    static final int BATCH = 500;
    static final int RANGE = 100;

    static int qty(long id) { return (int) ((id * 7919 + 13) % 1000); }

    static BigDecimal price(long id) { return BigDecimal.valueOf((id * 31) % 100000, 2); }

    /** What one thread adds up: the quantities read back by key, by range and by aggregate. */
    static final class Sums {
        long lookups;
        long ranges;
        long aggregates;
        long listed;
    }

    static void insert(Connection c, int owner, long first, long count) throws SQLException {
        try (PreparedStatement insert = c.prepareStatement(
                "INSERT INTO item(id, owner, name, qty, price) VALUES (?, ?, ?, ?, ?)")) {
            for (long i = 0; i < count; i++) {
                long id = first + i;
                insert.setLong(1, id);
                insert.setInt(2, owner);
                insert.setString(3, "item-" + id);
                insert.setInt(4, qty(id));
                insert.setBigDecimal(5, price(id));
                insert.addBatch();
                if ((i + 1) % BATCH == 0 || i + 1 == count) {
                    insert.executeBatch();
                    c.commit();
                }
            }
        }
    }

    static void lookups(Connection c, long first, long count, Sums sums) throws SQLException {
        try (PreparedStatement lookup = c.prepareStatement("SELECT qty, name FROM item WHERE id = ?")) {
            for (long i = 0; i < count; i++) {
                lookup.setLong(1, first + i);
                try (ResultSet row = lookup.executeQuery()) {
                    if (!row.next()) throw new IllegalStateException("no row " + (first + i));
                    sums.lookups += row.getInt(1);
                    if (row.getString(2).isEmpty()) throw new IllegalStateException("no name");
                }
            }
        }
    }

    static void ranges(Connection c, long first, long count, Sums sums) throws SQLException {
        try (PreparedStatement range = c.prepareStatement(
                "SELECT SUM(qty), COUNT(*) FROM item WHERE id BETWEEN ? AND ?")) {
            for (long low = first; low < first + count; low += RANGE) {
                range.setLong(1, low);
                range.setLong(2, Math.min(low + RANGE, first + count) - 1);
                try (ResultSet row = range.executeQuery()) {
                    row.next();
                    sums.ranges += row.getLong(1);
                }
            }
        }
    }

    static void aggregates(Connection c, int owner, Sums sums) throws SQLException {
        try (PreparedStatement grouped = c.prepareStatement(
                "SELECT qty / 100, COUNT(*), SUM(qty), MAX(price) FROM item WHERE owner = ? GROUP BY qty / 100 "
                        + "ORDER BY 1")) {
            grouped.setInt(1, owner);
            try (ResultSet rows = grouped.executeQuery()) {
                while (rows.next()) sums.aggregates += rows.getLong(3);
            }
        }
        try (PreparedStatement ordered = c.prepareStatement(
                "SELECT id, qty FROM item WHERE owner = ? AND name LIKE 'item-%7' ORDER BY qty DESC, id LIMIT 50")) {
            ordered.setInt(1, owner);
            try (ResultSet rows = ordered.executeQuery()) {
                while (rows.next()) sums.listed++;
            }
        }
    }

    static Sums work(int owner, long first, long count) throws SQLException {
        Sums sums = new Sums();
        try (Connection c = DriverManager.getConnection(URL, "sa", "")) {
            c.setAutoCommit(false);
            insert(c, owner, first, count);
            lookups(c, first, count, sums);
            ranges(c, first, count, sums);
            aggregates(c, owner, sums);
            c.commit();
        }
        return sums;
    }

    public static void main(String[] args) throws Exception {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 40000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        if (rows % threads != 0) throw new IllegalArgumentException("rows must be a multiple of threads");
        long start = System.nanoTime();
        try (Connection setup = DriverManager.getConnection(URL, "sa", "");
             Statement statement = setup.createStatement()) {
            statement.execute("CREATE TABLE item(id BIGINT PRIMARY KEY, owner INT NOT NULL, name VARCHAR(64), "
                    + "qty INT NOT NULL, price DECIMAL(12, 2))");
            statement.execute("CREATE INDEX item_owner ON item(owner)");
            long share = rows / threads;
            List<Thread> workers = new ArrayList<>();
            Sums[] results = new Sums[threads];
            Throwable[] failures = new Throwable[threads];
            for (int t = 0; t < threads; t++) {
                final int owner = t;
                Thread worker = new Thread(() -> {
                    try {
                        results[owner] = work(owner, owner * share, share);
                    } catch (Throwable e) {
                        failures[owner] = e;
                    }
                }, "h2load-" + t);
                workers.add(worker);
                worker.start();
            }
            for (Thread worker : workers) worker.join();
            for (Throwable failure : failures) {
                if (failure != null) throw new RuntimeException(failure);
            }
            Sums total = new Sums();
            for (Sums s : results) {
                total.lookups += s.lookups;
                total.ranges += s.ranges;
                total.aggregates += s.aggregates;
                total.listed += s.listed;
            }
            long count;
            long qtySum;
            try (ResultSet all = statement.executeQuery("SELECT COUNT(*), SUM(qty) FROM item")) {
                all.next();
                count = all.getLong(1);
                qtySum = all.getLong(2);
            }
            statement.execute("DROP TABLE item");
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            System.out.println("H2Load rows=" + rows + " threads=" + threads + " elapsed_ms=" + elapsed
                    + " count=" + count + " qty_sum=" + qtySum + " lookup_sum=" + total.lookups
                    + " range_sum=" + total.ranges + " aggregate_sum=" + total.aggregates + " listed=" + total.listed);
        }
    }
}
