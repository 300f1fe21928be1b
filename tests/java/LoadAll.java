import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

// Loads and initializes every class of a module of the running JDK (`module:java.base`, listed
// from the jrt file system) and of jar files (`jar:/path.jar`, through a class loader of their
// own), one load() call per class (tests/integration/cpu_times.py, case load_all). Initialization
// may fail for reasons of the class's own (a missing optional library, a class meant to be
// initialized only by the JDK in a certain order); those are counted by kind. A VerifyError or a
// ClassFormatError is printed whole: the test allows none.
public class LoadAll {
    static int loaded;
    static int failed;
    static int verifyErrors;
    static int formatErrors;

    static void load(String name, ClassLoader loader) {
        try {
            Class.forName(name, true, loader);
            loaded++;
        } catch (Throwable e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof VerifyError) && !(cause instanceof ClassFormatError)) {
                cause = cause.getCause();
            }
            if (cause instanceof VerifyError) {
                verifyErrors++;
                System.out.println("LoadAll VerifyError " + name + ": " + cause);
            } else if (cause instanceof ClassFormatError) {
                formatErrors++;
                System.out.println("LoadAll ClassFormatError " + name + ": " + cause);
            } else {
                failed++;
                System.out.println("LoadAll failed " + name + ": " + cause.getClass().getName());
            }
        }
    }

    static List<String> moduleClasses(String module) throws IOException {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        Path root = jrt.getPath("/modules", module);
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.forEach(p -> {
                String file = root.relativize(p).toString();
                if (file.endsWith(".class") && !file.equals("module-info.class")) {
                    names.add(file.substring(0, file.length() - 6).replace('/', '.'));
                }
            });
        }
        names.sort(null);
        return names;
    }

    static List<String> jarClasses(String jar) throws IOException {
        List<String> names = new ArrayList<>();
        try (JarFile file = new JarFile(jar)) {
            Enumeration<JarEntry> entries = file.entries();
            while (entries.hasMoreElements()) {
                String entry = entries.nextElement().getName();
                if (entry.endsWith(".class") && !entry.endsWith("module-info.class") && !entry.startsWith("META-INF/")) {
                    names.add(entry.substring(0, entry.length() - 6).replace('/', '.'));
                }
            }
        }
        names.sort(null);
        return names;
    }

    public static void main(String[] args) throws Exception {
        long start = System.nanoTime();
        for (String source : args) {
            int before = loaded + failed + verifyErrors + formatErrors;
            List<String> names;
            ClassLoader loader;
            if (source.startsWith("module:")) {
                names = moduleClasses(source.substring("module:".length()));
                loader = ClassLoader.getSystemClassLoader();
            } else if (source.startsWith("jar:")) {
                String jar = source.substring("jar:".length());
                names = jarClasses(jar);
                loader = new URLClassLoader(new URL[] {Path.of(jar).toUri().toURL()}, ClassLoader.getSystemClassLoader());
            } else {
                throw new IllegalArgumentException(source);
            }
            for (String name : names) {
                load(name, loader);
            }
            System.out.println("LoadAll source=" + source + " classes=" + names.size() + " tried="
                    + (loaded + failed + verifyErrors + formatErrors - before));
        }
        System.out.println("LoadAll loaded=" + loaded + " failed=" + failed + " verify_errors=" + verifyErrors
                + " format_errors=" + formatErrors + " load_ms=" + (System.nanoTime() - start) / 1_000_000);
    }
}
