import java.lang.reflect.Method;

/**
 * Runs the main method of a rewritten class (given by name), then prints the tracker's counts.
 * Not rewritten itself. With "--link JARLIST" instead: loads and links (verifies) every class
 * named in the file JARLIST, one name a line, and prints how many failed and why.
 */
public final class RunRewritten {
  public static void main(String[] args) throws Throwable {
    if (args[0].equals("--link")) {
      link(args[1]);
      return;
    }
    Class<?> main = Class.forName(args[0]);
    String[] rest = new String[args.length - 1];
    System.arraycopy(args, 1, rest, 0, rest.length);
    main.getMethod("main", String[].class).invoke(null, (Object) rest);
    Class.forName("java.lang.FasthprofTracker").getMethod("print").invoke(null);
  }

  private static void link(String listFile) throws Throwable {
    java.util.List<String> names = java.nio.file.Files.readAllLines(java.nio.file.Paths.get(listFile));
    int linked = 0;
    int verifyErrors = 0;
    int formatErrors = 0;
    int otherErrors = 0;
    ClassLoader loader = RunRewritten.class.getClassLoader();
    for (String name : names) {
      if (name.isEmpty()) continue;
      try {
        Class<?> c = Class.forName(name, false, loader);
        c.getDeclaredMethods();  // links the class, and so verifies it
        linked++;
      } catch (VerifyError e) {
        verifyErrors++;
        System.out.println("VERIFY " + name + ": " + e);
      } catch (ClassFormatError e) {
        formatErrors++;
        System.out.println("FORMAT " + name + ": " + e);
      } catch (Throwable e) {
        otherErrors++;
        System.out.println("OTHER " + name + ": " + e);
      }
    }
    System.out.println("LINKED " + linked + " VERIFY " + verifyErrors + " FORMAT " + formatErrors + " OTHER " + otherErrors);
  }
}
