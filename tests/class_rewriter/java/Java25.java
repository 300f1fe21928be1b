/**
 * Java 21+ forms for the rewriter's JVM check (--release 25, with JDK 25's javac): switch
 * patterns with guards and record patterns over a sealed hierarchy, case null, unnamed variables.
 * Expected counts: tests/integration/class_rewriter_jvm.py.
 */
public class Java25 {
  sealed interface Shape permits Circle, Rect {}

  record Circle(double r) implements Shape {}

  record Rect(double w, double h) implements Shape {}

  static double area(Shape s) {
    return switch (s) {
      case Circle c when c.r() == 0 -> 0;
      case Circle(double r) -> Math.PI * r * r;
      case Rect(double w, double h) -> w * h;
    };
  }

  static String describe(Object o) {
    return switch (o) {
      case null -> "null";
      case Integer i when i > 10 -> "big";
      case Integer i -> "int";
      case String s -> "string " + s.length();
      case Rect(double w, _) -> "rect " + w;
      default -> "other";
    };
  }

  public static void main(String[] args) {
    double total = 0;
    for (Shape s : new Shape[] {new Circle(0), new Circle(1), new Rect(2, 3)}) total += area(s);
    StringBuilder kinds = new StringBuilder();
    for (Object o : new Object[] {null, 42, 5, "hey", 3.0, new Rect(1, 1)}) kinds.append(describe(o)).append(',');
    System.out.println("CHECK " + total + " " + kinds);
  }
}
