/**
 * Known call graphs for the rewriter's JVM check (compiled with --release 8, 11 and 17): every
 * method's expected enter and exit counts are in tests/integration/class_rewriter_jvm.py. A method
 * left by an exception counts an enter and no exit (athrow is not instrumented).
 */
public class CallGraphs {
  static int finallyRuns;

  static int leaf(int x) {
    return x + 1;
  }

  // javac puts the loop's test at offset 0 and jumps back to it: the entry must run once.
  static int spin(int n) {
    while (true) {
      if (n <= 0) return 7;
      n--;
    }
  }

  // A branch straight to a return instruction.
  static void early(int x) {
    if (x > 0) {
      leaf(x);
    }
  }

  static int dense(int k) {
    switch (k) {
      case 0: return 10;
      case 1: return 11;
      case 2: return 12;
      case 3: return 13;
      default: return -1;
    }
  }

  static int sparse(int k) {
    switch (k) {
      case -100000: return 1;
      case 7: return 2;
      case 1 << 20: return 3;
      default: return 0;
    }
  }

  static String strings(String s) {
    switch (s) {
      case "a": return "A";
      case "bb": return "B";
      default: return s;
    }
  }

  static int tryCatchFinally(int x) {
    try {
      if (x == 3) throw new IllegalStateException("three");
      return leaf(x);
    } catch (IllegalStateException e) {
      return -1;
    } finally {
      finallyRuns++;
    }
  }

  static void thrower(int depth) {
    if (depth == 0) throw new UnsupportedOperationException("deep");
    thrower(depth - 1);
  }

  static int catchThree() {
    try {
      thrower(2);  // three frames of thrower: entered, never exited
      return 0;
    } catch (UnsupportedOperationException e) {
      return 1;
    }
  }

  static long recurse(int n) {
    return n <= 1 ? 1 : n * recurse(n - 1);
  }

  static class Base {
    final int value;

    Base(int value) {
      this.value = value;
    }
  }

  static class Holder {
    final Object held;

    Holder(Object held) {
      this.held = held;
    }
  }

  // Branches before super(): frames with uninitializedThis; the argument of `new Holder(...)`
  // is computed with an uninitialized Holder on the stack (uninitialized(offset) in frames).
  static class Sub extends Base {
    final Holder holder;

    Sub(int x) {
      super(x > 0 ? leaf(x) : -1);
      holder = new Holder(x > 5 ? "big" : x < 0 ? "negative" : "small");
    }
  }

  interface Shape {
    double area();

    default String describe() {
      return area() > 10 ? "large" : "small";
    }

    static Shape square(double side) {
      return () -> side * side;
    }
  }

  private int secret = 5;

  class Inner {
    int peek() {
      return secret;  // a nest mate's private field
    }
  }

  static int synchronizedLoop(Object lock, int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) {
      synchronized (lock) {
        if (i % 2 == 0) continue;
        sum += i;
      }
    }
    return sum;
  }

  public static void main(String[] args) {
    long check = 0;
    for (int i = 0; i < 1000; i++) check += leaf(i);
    for (int i = 0; i < 10; i++) check += spin(i);
    for (int i = -2; i < 3; i++) early(i);
    for (int i = 0; i < 6; i++) check += dense(i);
    int[] keys = {-100000, 7, 1 << 20, 8};
    for (int k : keys) check += sparse(k);
    for (String s : new String[] {"a", "bb", "c"}) check += strings(s).length();
    for (int i = 0; i < 5; i++) check += tryCatchFinally(i);
    check += catchThree();
    check += recurse(10);
    for (int i = -1; i < 8; i++) check += new Sub(i).value;
    Shape square = Shape.square(4);
    check += square.describe().length();
    check += Shape.square(1).describe().length();
    check += new CallGraphs().new Inner().peek();
    check += synchronizedLoop(new Object(), 9);
    Runnable lambda = () -> finallyRuns += 100;
    lambda.run();
    String concat = "x" + check + "y" + finallyRuns;
    System.out.println("CHECK " + concat);
  }
}
