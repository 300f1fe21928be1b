import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.stream.Stream;

/**
 * For the rewriter's fuzz-style JVM check: every class file of ORIGINALS (mutants of real classes)
 * is defined in a loader of its own and linked (so verified); those the JVM accepts are defined
 * again from REWRITTEN (the same file name, after the rewriter) and must be accepted too. Prints
 * "REJECTED name: error" for a rewritten class the JVM refused, "KEPT name" for a valid one the
 * rewriter left unchanged, then a summary line.
 */
public final class MutantCheck {
  static final class OneClass extends ClassLoader {
    OneClass(ClassLoader parent) {
      super(parent);
    }

    Class<?> define(byte[] bytes) {
      return defineClass(null, bytes, 0, bytes.length);
    }
  }

  /** null when the class was defined and linked, else what the JVM threw. */
  static Throwable link(Path file) {
    try {
      Class<?> c = new OneClass(MutantCheck.class.getClassLoader()).define(Files.readAllBytes(file));
      c.getDeclaredMethods();  // links the class, and so verifies it
      c.getDeclaredFields();
      return null;
    } catch (Throwable e) {
      return e;
    }
  }

  public static void main(String[] args) throws Exception {
    Path originals = Paths.get(args[0]);
    Path rewritten = Paths.get(args[1]);
    int valid = 0;
    int accepted = 0;
    int rejected = 0;
    int files = 0;
    int kept = 0;
    try (Stream<Path> list = Files.list(originals)) {
      for (Path file : (Iterable<Path>) list.sorted()::iterator) {
        files++;
        if (link(file) != null) continue;
        valid++;
        if (java.util.Arrays.equals(Files.readAllBytes(file), Files.readAllBytes(rewritten.resolve(file.getFileName())))) {
          kept++;  // the rewriter left it as it was (malformed to it, or nothing to do)
          System.out.println("KEPT " + file.getFileName());
        }
        Throwable error = link(rewritten.resolve(file.getFileName()));
        if (error == null) {
          accepted++;
        } else {
          rejected++;
          System.out.println("REJECTED " + file.getFileName() + ": " + error);
        }
      }
    }
    System.out.println("FILES " + files + " VALID " + valid + " KEPT " + kept + " ACCEPTED " + accepted
        + " REJECTED " + rejected);
  }
}
