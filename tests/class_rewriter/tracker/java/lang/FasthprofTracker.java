package java.lang;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A stand-in for the agent's tracker, for the rewriter's JVM checks only: counts the injected
 * enter and exit calls per method ID, and the injected allocation calls per site ID with the sum
 * of the array lengths they were given. Put on the boot path with --patch-module java.base=DIR.
 */
public final class FasthprofTracker {
  private static final int IDS = 1 << 20;
  private static final AtomicLongArray ENTERS = new AtomicLongArray(IDS);
  private static final AtomicLongArray EXITS = new AtomicLongArray(IDS);
  private static final AtomicLongArray ALLOCATIONS = new AtomicLongArray(IDS);
  private static final AtomicLongArray LENGTHS = new AtomicLongArray(IDS);

  private FasthprofTracker() {}

  public static void enter(int id) {
    ENTERS.incrementAndGet(id);
  }

  public static void exit(int id) {
    EXITS.incrementAndGet(id);
  }

  /** Before a `new` of site `site`. */
  public static void alloc(int site) {
    ALLOCATIONS.incrementAndGet(site);
  }

  /** Before an array allocation of site `site`: its length. */
  public static void allocArray(int length, int site) {
    ALLOCATIONS.incrementAndGet(site);
    LENGTHS.addAndGet(site, length);
  }

  /** Before a multianewarray of 2 dimensions or more of site `site`: all its counts, summed. */
  public static void allocMulti(int[] lengths, int site) {
    ALLOCATIONS.incrementAndGet(site);
    for (int length : lengths) {
      LENGTHS.addAndGet(site, length);
    }
  }

  /**
   * One line "COUNT id enters exits" per method ID that was entered or exited, then one line
   * "SITE id allocations lengths" per site ID that was counted, to stdout.
   */
  public static void print() {
    StringBuilder out = new StringBuilder();
    for (int id = 0; id < IDS; id++) {
      long enters = ENTERS.get(id);
      long exits = EXITS.get(id);
      if (enters != 0 || exits != 0) {
        out.append("COUNT ").append(id).append(' ').append(enters).append(' ').append(exits).append('\n');
      }
    }
    for (int id = 0; id < IDS; id++) {
      long allocations = ALLOCATIONS.get(id);
      if (allocations != 0) {
        out.append("SITE ").append(id).append(' ').append(allocations).append(' ').append(LENGTHS.get(id)).append('\n');
      }
    }
    System.out.print(out);
    System.out.flush();
  }
}
