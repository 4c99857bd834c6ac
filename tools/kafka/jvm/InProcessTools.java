// Runs many Kafka command-line tools in ONE JVM, each with its own stdout/stderr file and exit
// code, so recording a fixture does not pay a JVM start (about a CPU second) per dumped file.
// Launched as a single-file source program: java -cp '.kafka/<version>/libs/*' InProcessTools.java
//
// Jobs come on stdin, one per line, TAB-separated: stdout-path, stderr-path, main class, args...
// For each job one line "exit <code>" is written to the real stdout, in order.
// Exit.exit (used by Kafka's tools to end) is turned into an exception carrying the code. Exit
// is org.apache.kafka.common.utils.Exit in 4.1.1 and ...utils.internals.Exit in 4.4.0, so it is
// found and hooked by reflection (same methods, same nested Procedure interface). In a
// real JVM the FIRST Exit.exit ends everything, but some tools call it inside a
// catch (Throwable) (TopicCommand, JmxTool) that would swallow the exception and print it; so
// the first call fixes the exit code and closes the job's streams, as the process's end would.
// An uncaught exception is reported the way the JVM's default handler would, with exit code 1.
// Scala tools (kafka.tools.DumpLogSegments) print through scala.Console, whose stream is bound
// once, hence Console.withOut/withErr around each call.
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

public class InProcessTools {
    static final class ExitCalled extends RuntimeException {
        final int code;
        ExitCalled(int code) { super(null, null, false, false); this.code = code; }
    }

    /** The job's exit code once Exit.exit/halt was called, else null; output stops there. */
    static volatile Integer exited;

    /** Drops every write once the job has "exited". */
    static final class UntilExit extends FilterOutputStream {
        UntilExit(OutputStream out) { super(out); }
        @Override public void write(int b) throws IOException { if (exited == null) out.write(b); }
        @Override public void write(byte[] b, int off, int len) throws IOException {
            if (exited == null) out.write(b, off, len);
        }
    }

    static void exit(int code) {
        if (exited == null) {
            System.out.flush();
            System.err.flush();
            exited = code;
        }
        throw new ExitCalled(code);
    }

    public static void main(String[] argv) throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        hookExit();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            String[] args = Arrays.copyOfRange(f, 3, f.length);
            int code;
            exited = null;
            try (PrintStream out = new PrintStream(new UntilExit(new FileOutputStream(f[0])), true, StandardCharsets.UTF_8);
                 PrintStream err = new PrintStream(new UntilExit(new FileOutputStream(f[1])), true, StandardCharsets.UTF_8)) {
                System.setOut(out);
                System.setErr(err);
                try {
                    code = run(f[2], args, out, err);
                    if (exited != null) code = exited;
                } finally {
                    System.setOut(realOut);
                    System.setErr(realErr);
                }
            }
            realOut.println("exit " + code);
            realOut.flush();
        }
        System.exit(0);
    }

    static final String[] EXIT_CLASSES = {
        "org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit"};

    /** Exit.setExitProcedure/setHaltProcedure(exit) on the release's Exit class. */
    static void hookExit() throws ReflectiveOperationException {
        for (String name : EXIT_CLASSES) {
            Class<?> exitClass;
            try {
                exitClass = Class.forName(name);
            } catch (ClassNotFoundException e) {
                continue;
            }
            Class<?> procedure = Class.forName(name + "$Procedure");
            Object hook = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
                (proxy, method, a) -> {
                    switch (method.getName()) {
                        case "execute": exit((Integer) a[0]); return null;
                        case "hashCode": return System.identityHashCode(proxy);
                        case "equals": return proxy == a[0];
                        default: return "InProcessTools.exit";
                    }
                });
            exitClass.getMethod("setExitProcedure", procedure).invoke(null, hook);
            exitClass.getMethod("setHaltProcedure", procedure).invoke(null, hook);
            return;
        }
        throw new ClassNotFoundException("none of " + Arrays.toString(EXIT_CLASSES));
    }

    static int run(String mainClass, String[] args, PrintStream out, PrintStream err) {
        int[] code = {0};
        scala.Console.withOut(out, (scala.Function0<Object>) () ->
            scala.Console.withErr(err, (scala.Function0<Object>) () -> {
                code[0] = invoke(mainClass, args, err);
                return null;
            }));
        out.flush();
        err.flush();
        return code[0];
    }

    static int invoke(String mainClass, String[] args, PrintStream err) {
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof ExitCalled) return ((ExitCalled) cause).code;
            err.print("Exception in thread \"main\" ");
            cause.printStackTrace(err);
            return 1;
        } catch (ReflectiveOperationException e) {
            e.printStackTrace(err);
            return 1;
        }
    }
}
