/**
 * A program the heap-dump tests package into a signed jar, so that its class has signers and a
 * protection domain with a code source: its CLASS DUMP must name both.
 *
 * Usage: SignedApp [seconds to stay alive after "ready" (default 0)]
 */
public class SignedApp {
    static final Object KEPT = new StringBuilder("signed-").append(System.nanoTime() > 0).toString();

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        System.out.println("signers " + (SignedApp.class.getSigners() == null ? 0 : SignedApp.class.getSigners().length));
        System.out.println("ready");
        System.out.flush();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) Thread.sleep(50);
        System.out.println(KEPT);
    }
}
