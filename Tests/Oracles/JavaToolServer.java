// Runs a Java command-line tool's main class many times in one JVM, for the tests (TestSupport's JavaToolServers):
// a JVM spends most of a short apksigner run starting up, loading classes and compiling, and the suites run
// apksigner thousands of times. Each request is one run as a separate `java -cp CLASSPATH MAIN ARGS...` process
// would make it, with the same stdout, stderr and exit status:
// - System.out, System.err and System.in are the run's own (standard input is empty, as the tests give it);
// - System.exit(n) ends the run with status n (a SecurityManager turns it into an Error no `catch (Exception)`
//   in the tool swallows), a normal return with 0;
// - an exception out of main is printed as the JVM's handler prints it ("Exception in thread "main" " and the
//   stack trace) and gives status 1;
// - stack traces end at the tool's main method, as in a process of its own, wherever they are printed: this class
//   is on the boot class path (`-Xbootclasspath/a`), where HotSpot honours @Hidden, which leaves its frame out of
//   every trace, and the tool's main is called through a method handle, whose frames are hidden too;
// - the environment variables the caller sets for the run are what System.getenv returns during it.
// One run at a time: the tool keeps state in static fields and the standard streams are global.
//
// Protocol on standard input and output, big-endian (DataInputStream): a request is the argument count, each
// argument, the count of environment variables to set, each name and value (strings: a length, then UTF-8
// bytes); the response is the exit status, then stdout's bytes and stderr's bytes, each after its length. The
// server ends when its standard input ends.

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.security.Permission;
import java.util.HashMap;
import java.util.Map;

public final class JavaToolServer {
    /** Thrown by System.exit during a run: an Error, so that the tool's own handlers let it through. */
    static final class ExitRequest extends Error {
        final int status;
        ExitRequest(int status) { super(null, null, false, false); this.status = status; }
    }

    @jdk.internal.vm.annotation.Hidden
    public static void main(String[] args) throws Throwable {
        String mainClassName = args[0];
        // This class's own lookup, not the public one: keytool's main class is in a package of java.base that the
        // server's options export to unnamed modules only (`--add-exports`), which a public lookup does not see.
        MethodHandle toolMain = MethodHandles.lookup().findStatic(ClassLoader.getSystemClassLoader().loadClass(mainClassName), "main",
                                                                        MethodType.methodType(void.class, String[].class));
        DataInputStream in = new DataInputStream(new BufferedInputStream(new java.io.FileInputStream(java.io.FileDescriptor.in)));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new java.io.FileOutputStream(java.io.FileDescriptor.out)));
        Map<String, String> environment = writableEnvironment();
        Map<String, String> baseEnvironment = new HashMap<>(environment);
        Charset charset = Charset.defaultCharset();
        PrintStream serverErr = System.err;
        // Between runs nothing may reach the protocol's stream: a stray print from a tool's thread goes nowhere.
        PrintStream discard = new PrintStream(java.io.OutputStream.nullOutputStream(), true);
        System.setOut(discard);
        System.setSecurityManager(new SecurityManager() {
            @Override public void checkPermission(Permission permission) {}
            @Override public void checkPermission(Permission permission, Object context) {}
            @Override public void checkExit(int status) { throw new ExitRequest(status); }
        });
        long runs = 0;
        while (true) {
            String[] toolArgs;
            Map<String, String> overrides = new HashMap<>();
            try {
                toolArgs = new String[in.readInt()];
            } catch (EOFException end) {
                // For whoever reads the server's stderr (TestSupport's APKPATCH_TEST_JAVA_SERVER_LOG): what it cost.
                long cpu = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
                serverErr.printf("JavaToolServer %s: %d runs, %.2f s CPU%n", mainClassName, runs, cpu / 1e9);
                return;
            }
            runs++;
            for (int i = 0; i < toolArgs.length; i++) toolArgs[i] = readString(in);
            int count = in.readInt();
            for (int i = 0; i < count; i++) overrides.put(readString(in), readString(in));

            environment.clear();
            environment.putAll(baseEnvironment);
            environment.putAll(overrides);
            ByteArrayOutputStream stdout = new ByteArrayOutputStream(), stderr = new ByteArrayOutputStream();
            PrintStream runOut = new PrintStream(stdout, true, charset), runErr = new PrintStream(stderr, true, charset);
            InputStream runIn = new ByteArrayInputStream(new byte[0]);
            System.setOut(runOut);
            System.setErr(runErr);
            System.setIn(runIn);
            int status;
            try {
                toolMain.invokeExact(toolArgs);
                status = 0;
            } catch (ExitRequest exit) {
                status = exit.status;
            } catch (Throwable thrown) {
                runErr.print("Exception in thread \"main\" ");
                thrown.printStackTrace(runErr);
                status = 1;
            } finally {
                System.setOut(discard);
                System.setErr(serverErr);
            }
            runOut.flush();
            runErr.flush();
            out.writeInt(status);
            writeBytes(out, stdout.toByteArray());
            writeBytes(out, stderr.toByteArray());
            out.flush();
        }
    }

    /** The map behind System.getenv(), which a process cannot otherwise change. */
    @SuppressWarnings("unchecked")
    private static Map<String, String> writableEnvironment() throws Exception {
        Map<String, String> unmodifiable = System.getenv();
        Field inner = unmodifiable.getClass().getDeclaredField("m");
        inner.setAccessible(true);
        return (Map<String, String>) inner.get(unmodifiable);
    }

    private static String readString(DataInputStream in) throws Exception {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void writeBytes(DataOutputStream out, byte[] bytes) throws Exception {
        out.writeInt(bytes.length);
        out.write(bytes);
    }
}
