// A tiny JSON object writer for the RESULT line (numbers, strings, booleans, number arrays).
package troupe.peer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Json {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    Json put(String key, Object value) {
        fields.put(key, value);
        return this;
    }

    /** Whether a check failed (the RESULT has a `failure` field). */
    boolean failed() {
        return fields.containsKey("failure");
    }

    void print() {
        StringBuilder b = new StringBuilder("RESULT {");
        boolean first = true;
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (!first) b.append(',');
            first = false;
            b.append('"').append(e.getKey()).append("\":");
            write(b, e.getValue());
        }
        System.out.println(b.append('}'));
        System.out.flush();
    }

    private static void write(StringBuilder b, Object v) {
        if (v instanceof String s) {
            b.append('"').append(s.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        } else if (v instanceof List<?> list) {
            b.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) b.append(',');
                write(b, list.get(i));
            }
            b.append(']');
        } else if (v instanceof Double d && (d.isNaN() || d.isInfinite())) {
            b.append("null");
        } else {
            b.append(v);
        }
    }
}
