package java.lang;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A stand-in for the agent's tracker, for the rewriter's JVM checks only: counts the injected
 * enter and exit calls per method ID. Put on the boot path with --patch-module java.base=DIR.
 */
public final class FasthprofTracker {
  private static final int IDS = 1 << 20;
  private static final AtomicLongArray ENTERS = new AtomicLongArray(IDS);
  private static final AtomicLongArray EXITS = new AtomicLongArray(IDS);

  private FasthprofTracker() {}

  public static void enter(int id) {
    ENTERS.incrementAndGet(id);
  }

  public static void exit(int id) {
    EXITS.incrementAndGet(id);
  }

  /** One line "id enters exits" per ID that was entered or exited, to stdout. */
  public static void print() {
    StringBuilder out = new StringBuilder();
    for (int id = 0; id < IDS; id++) {
      long enters = ENTERS.get(id);
      long exits = EXITS.get(id);
      if (enters != 0 || exits != 0) {
        out.append("COUNT ").append(id).append(' ').append(enters).append(' ').append(exits).append('\n');
      }
    }
    System.out.print(out);
    System.out.flush();
  }
}
