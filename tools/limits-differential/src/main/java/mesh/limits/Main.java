package mesh.limits;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.limit.AIMDLimit;
import com.netflix.concurrency.limits.limit.FixedLimit;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limit.VegasLimit;
import com.netflix.concurrency.limits.limit.WindowedLimit;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Feeds one concurrency-limits-core 0.5.4 limit the samples read on stdin and prints its limit
 * after each one.
 *
 * <pre>java -jar limits-differential.jar ALGORITHM [key=value ...] &lt; samples</pre>
 *
 * ALGORITHM is fixed, aimd, vegas or gradient2. Settings (all optional, the reference's defaults
 * otherwise): limit (fixed); initialLimit, minLimit, maxLimit, backoffRatio, timeoutNs (aimd);
 * initialLimit, maxConcurrency, smoothing, probeMultiplier, jitter (vegas); initialLimit,
 * minLimit, maxConcurrency, smoothing, queueSize, longWindow, rttTolerance (gradient2);
 * windowed=1 wraps the limit in WindowedLimit with its defaults. Vegas draws its probe jitter from
 * ThreadLocalRandom; jitter=a,b,c replaces each draw with the next value of that list (cycled), so
 * both sides of the differential probe on the same samples.
 *
 * Each stdin line is "start_ns rtt_ns inflight dropped" (dropped 0 or 1); each stdout line is the
 * limit after that sample.
 *
 * <pre>java -jar limits-differential.jar batch &lt; runs</pre>
 *
 * runs many in one JVM: a line "run ALGORITHM [key=value ...]" starts a new limit (and is echoed
 * as "run"), the sample lines after it go to that limit.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: limits-differential ALGORITHM [key=value ...] < samples");
            System.exit(2);
        }
        boolean batch = "batch".equals(args[0]);
        Subject subject = batch ? null : new Subject(args);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (f[0].isEmpty()) {
                continue;
            }
            if (batch && "run".equals(f[0])) {
                subject = new Subject(java.util.Arrays.copyOfRange(f, 1, f.length));
                out.println("run");
                continue;
            }
            if (subject == null) {
                System.err.println("a sample before the first run line");
                System.exit(2);
            }
            out.println(subject.sample(f));
        }
        out.flush();
    }

    /** One limit under test: built from "ALGORITHM key=value ...", fed sample lines. */
    private static final class Subject {
        private final Limit limit;
        private final JitterPin pin;

        Subject(String[] args) throws ReflectiveOperationException {
            Map<String, String> settings = new HashMap<>();
            for (int i = 1; i < args.length; i++) {
                String[] pair = args[i].split("=", 2);
                if (pair.length != 2) {
                    System.err.println("setting is not key=value: " + args[i]);
                    System.exit(2);
                }
                settings.put(pair[0], pair[1]);
            }
            Limit inner = build(args[0], settings);
            this.pin = inner instanceof VegasLimit vegas ? new JitterPin(vegas, settings) : null;
            this.limit = "1".equals(settings.get("windowed"))
                ? WindowedLimit.newBuilder().build(inner) : inner;
        }

        int sample(String[] f) throws ReflectiveOperationException {
            limit.onSample(Long.parseLong(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]),
                "1".equals(f[3]));
            if (pin != null) {
                pin.afterSample();
            }
            return limit.getLimit();
        }
    }

    private static Limit build(String algorithm, Map<String, String> s) {
        switch (algorithm) {
            case "fixed":
                return FixedLimit.of(intOf(s, "limit", 10));
            case "aimd":
                return AIMDLimit.newBuilder()
                    .initialLimit(intOf(s, "initialLimit", 20))
                    .minLimit(intOf(s, "minLimit", 20))
                    .maxLimit(intOf(s, "maxLimit", 200))
                    .backoffRatio(doubleOf(s, "backoffRatio", 0.9))
                    .timeout(Long.parseLong(s.getOrDefault("timeoutNs", "5000000000")),
                        TimeUnit.NANOSECONDS)
                    .build();
            case "vegas":
                return VegasLimit.newBuilder()
                    .initialLimit(intOf(s, "initialLimit", 20))
                    .maxConcurrency(intOf(s, "maxConcurrency", 1000))
                    .smoothing(doubleOf(s, "smoothing", 1.0))
                    .probeMultiplier(intOf(s, "probeMultiplier", 30))
                    .build();
            case "gradient2":
                return Gradient2Limit.newBuilder()
                    .initialLimit(intOf(s, "initialLimit", 20))
                    .minLimit(intOf(s, "minLimit", 20))
                    .maxConcurrency(intOf(s, "maxConcurrency", 200))
                    .smoothing(doubleOf(s, "smoothing", 0.2))
                    .queueSize(intOf(s, "queueSize", 4))
                    .longWindow(intOf(s, "longWindow", 600))
                    .rttTolerance(doubleOf(s, "rttTolerance", 1.5))
                    .build();
            default:
                System.err.println("unknown algorithm: " + algorithm);
                System.exit(2);
                return null;
        }
    }

    private static int intOf(Map<String, String> s, String key, int otherwise) {
        return s.containsKey(key) ? Integer.parseInt(s.get(key)) : otherwise;
    }

    private static double doubleOf(Map<String, String> s, String key, double otherwise) {
        return s.containsKey(key) ? Double.parseDouble(s.get(key)) : otherwise;
    }

    /** Overwrites VegasLimit's private probeJitter at construction and after every probe. */
    private static final class JitterPin {
        private final VegasLimit vegas;
        private final double[] values;
        private final Field jitter;
        private final Field probeCount;
        private int next = 0;

        JitterPin(VegasLimit vegas, Map<String, String> settings) throws ReflectiveOperationException {
            this.vegas = vegas;
            String list = settings.get("jitter");
            this.values = list == null ? new double[0]
                : java.util.Arrays.stream(list.split(",")).mapToDouble(Double::parseDouble).toArray();
            this.jitter = VegasLimit.class.getDeclaredField("probeJitter");
            this.probeCount = VegasLimit.class.getDeclaredField("probeCount");
            jitter.setAccessible(true);
            probeCount.setAccessible(true);
            pinNext();
        }

        void afterSample() throws ReflectiveOperationException {
            // probeCount is incremented before the probe test, so 0 after a sample means a probe.
            if (probeCount.getInt(vegas) == 0) {
                pinNext();
            }
        }

        private void pinNext() throws ReflectiveOperationException {
            if (values.length > 0) {
                jitter.setDouble(vegas, values[next++ % values.length]);
            }
        }
    }
}
