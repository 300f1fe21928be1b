package java.lang;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A stand-in for the agent's tracker, for the rewriter's JVM checks only: counts the injected
 * enter and exit calls per method ID, and the injected allocation calls per site ID with the sum
 * of the array lengths they were given; and the mark calls after each allocation (RewritePlan::marks)
 * per site ID with the classes of the objects handed over, keeping each object until the program
 * under test claims it (expectMarked: made once, marked once; claimMarked: those of a class it
 * cannot see) and says it claimed them all (expectNoMoreMarked). Put on the boot path with --patch-module java.base=DIR.
 */
public final class FasthprofTracker {
  private static final int IDS = 1 << 20;
  private static final AtomicLongArray ENTERS = new AtomicLongArray(IDS);
  private static final AtomicLongArray EXITS = new AtomicLongArray(IDS);
  private static final AtomicLongArray ALLOCATIONS = new AtomicLongArray(IDS);
  private static final AtomicLongArray LENGTHS = new AtomicLongArray(IDS);
  private static final AtomicLongArray MARKS = new AtomicLongArray(IDS);
  private static final java.util.Map<Integer, java.util.Set<String>> MARK_CLASSES =
      new java.util.concurrent.ConcurrentHashMap<>();
  private static final java.util.IdentityHashMap<Object, Integer> UNCLAIMED = new java.util.IdentityHashMap<>();
  private static final StringBuilder MARK_ERRORS = new StringBuilder();

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

  /** Before a call of Unsafe.allocateInstance of site `site`: the class it is given. */
  public static void allocClass(Class<?> type, int site) {
    ALLOCATIONS.incrementAndGet(site);
  }

  /** Before a call sure to reach Object.clone of site `site` (RewritePlan::clones): the receiver. */
  public static void allocClone(Object receiver, int site) {
    ALLOCATIONS.incrementAndGet(site);
  }

  /** After an allocation of site `site` (new's initializer, an array, allocateInstance, a clone). */
  public static void marked(Object made, int site) {
    mark(made, site);
  }

  /** After a multianewarray of `dimensions` >= 2 of site `site`. */
  public static void markedMulti(Object made, int dimensions, int site) {
    String name = made.getClass().getName();
    if (dimensions < 2 || name.length() <= dimensions || name.charAt(dimensions - 1) != '[') {
      error("site " + site + ": " + dimensions + " dimensions for a " + name);
    }
    mark(made, site);
  }

  public static void markedClass(Object made, int site) {
    mark(made, site);
  }

  public static void markedClone(Object made, int site) {
    mark(made, site);
  }

  private static void mark(Object made, int site) {
    MARKS.incrementAndGet(site);
    MARK_CLASSES.computeIfAbsent(site, k -> java.util.concurrent.ConcurrentHashMap.newKeySet()).add(made.getClass().getName());
    synchronized (UNCLAIMED) {
      if (UNCLAIMED.put(made, site) != null) {
        error("site " + site + ": a " + made.getClass().getName() + " marked twice");
      }
    }
  }

  private static void error(String what) {
    synchronized (MARK_ERRORS) {
      MARK_ERRORS.append("MARKERROR ").append(what).append('\n');
    }
  }

  /** The program made `made`: it must have been marked, once. */
  public static void expectMarked(Object made) {
    synchronized (UNCLAIMED) {
      if (UNCLAIMED.remove(made) == null) {
        error("a " + made.getClass().getName() + " made but not marked");
      }
    }
  }

  /**
   * Claims every object of the class named `className` (Class.getName()) marked and not claimed
   * yet: those the program cannot see (javac's StringBuilder of a concatenation, an enum's
   * $VALUES). How many it claimed.
   */
  public static int claimMarked(String className) {
    int claimed = 0;
    synchronized (UNCLAIMED) {
      for (java.util.Iterator<Object> i = UNCLAIMED.keySet().iterator(); i.hasNext();) {
        if (i.next().getClass().getName().equals(className)) {
          i.remove();
          claimed++;
        }
      }
    }
    return claimed;
  }

  /** Every object marked so far was claimed by expectMarked. */
  public static void expectNoMoreMarked(String where) {
    synchronized (UNCLAIMED) {
      for (java.util.Map.Entry<Object, Integer> e : UNCLAIMED.entrySet()) {
        error(where + ": site " + e.getValue() + " marked a " + e.getKey().getClass().getName() + " the program did not make");
      }
      UNCLAIMED.clear();
    }
  }

  /**
   * One line "COUNT id enters exits" per method ID that was entered or exited, then one line
   * "SITE id allocations lengths" per site ID that was counted, then "MARK id marks classes" per
   * site ID that was marked (the classes' names, sorted, comma-separated) and a line
   * "MARKERROR ..." per mark that was wrong, to stdout.
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
    for (int id = 0; id < IDS; id++) {
      long marks = MARKS.get(id);
      if (marks != 0) {
        out.append("MARK ").append(id).append(' ').append(marks).append(' ')
            .append(String.join(",", new java.util.TreeSet<>(MARK_CLASSES.get(id)))).append('\n');
      }
    }
    out.append(MARK_ERRORS);
    System.out.print(out);
    System.out.flush();
  }
}
