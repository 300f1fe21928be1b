import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

// Debian's H2 (libh2-java) under load for cpu=times (tests/integration/cpu_times.py, case h2):
// `threads` threads, each with its own connection to one in-memory database, insert `rows` rows
// each through insertRow() and read them back through lookup(), one call per row, while a
// reader thread runs aggregate queries. The test knows how many times insertRow(), lookup() and
// H2's JdbcPreparedStatement.executeUpdate/executeQuery under them were called.
public class H2Load {
    static final String URL = "jdbc:h2:mem:load;DB_CLOSE_DELAY=-1";

    static void insertRow(PreparedStatement insert, int id, int worker) throws SQLException {
        insert.setInt(1, id);
        insert.setInt(2, worker);
        insert.setString(3, "row " + id + " of worker " + worker);
        insert.executeUpdate();
    }

    static long lookup(PreparedStatement select, int id) throws SQLException {
        select.setInt(1, id);
        try (ResultSet rs = select.executeQuery()) {
            if (!rs.next()) {
                throw new IllegalStateException("row " + id + " missing");
            }
            return rs.getInt(1) + rs.getString(2).length();
        }
    }

    static void worker(int worker, int rows) {
        try (Connection c = DriverManager.getConnection(URL, "sa", "");
             PreparedStatement insert = c.prepareStatement("INSERT INTO T(ID, WORKER, NAME) VALUES (?, ?, ?)");
             PreparedStatement select = c.prepareStatement("SELECT WORKER, NAME FROM T WHERE ID = ?")) {
            long sum = 0;
            for (int i = 0; i < rows; i++) {
                insertRow(insert, worker * rows + i, worker);
            }
            for (int i = 0; i < rows; i++) {
                sum += lookup(select, worker * rows + i);
            }
            if (sum <= 0) {
                throw new IllegalStateException("nothing read");
            }
        } catch (SQLException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int rows = Integer.parseInt(args[1]);
        try (Connection c = DriverManager.getConnection(URL, "sa", "");
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE T(ID INT PRIMARY KEY, WORKER INT, NAME VARCHAR(100))");
            s.execute("CREATE INDEX T_WORKER ON T(WORKER)");
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < threads; w++) {
                final int worker = w;
                Thread t = new Thread(() -> worker(worker, rows), "h2-worker-" + w);
                t.start();
                workers.add(t);
            }
            // Aggregates beside the writers, until they are done.
            long queries = 0;
            while (workers.stream().anyMatch(Thread::isAlive)) {
                try (ResultSet rs = s.executeQuery("SELECT WORKER, COUNT(*), MAX(LENGTH(NAME)) FROM T GROUP BY WORKER")) {
                    while (rs.next()) {
                        queries++;
                    }
                }
            }
            for (Thread t : workers) {
                t.join();
            }
            try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM T")) {
                rs.next();
                System.out.println("H2Load rows=" + rs.getLong(1) + " aggregate_rows=" + queries);
            }
            s.execute("SHUTDOWN");
        }
    }
}
