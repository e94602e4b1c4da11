package dev.splitaudit.benchmarks;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

/**
 * The JVM baseline of benchmarks/inspect_benchmark.py: reads a NumberSequenceSource's {@code SourceReaderState}
 * with Flink's own State Processor API, the way the notes describe (charles-tan's gist): list state of
 * {@code byte[]}, then strip the 8-byte SimpleVersionedSerialization header and decode the split.
 *
 * <p>Prints one JSON line: how many splits, the sum of their remaining values ({@code to - from + 1}, a checksum
 * the Python side compares with its own reading), and the milliseconds spent inside the JVM.
 *
 * <p>Arguments: {@code savepointPath uid}.
 *
 * <p>With {@code dump} first, the second use, by fixtures/generate_keyed.py and its test
 * (tests/unit/savepoint/rocksdb/test_churn_chain.py): every entry of the named keyed states of one operator, read
 * with {@code SavepointReader.readKeyedState(OperatorIdentifier.forUid(uid), KeyedStateReaderFunction)} after
 * restoring them into the given backend, printed as JSON lines in a canonical form (members in name order, no
 * spaces, the lines sorted), one per value-state value, list (its elements in order), map entry and timer:
 * {@code {"key":k,"namespace":null,"state":name[,"user_key":u],"value":v}}. The namespace is always null
 * ({@code VoidNamespace}: a {@code KeyedStateReaderFunction} reads no other); timers are those the reader's
 * context lists for each key, under the names of the column families a timer service {@code user-timers} keeps
 * them in. Keys are strings; each state is {@code name:value:T}, {@code name:list:T} or {@code name:map:U:T}
 * with {@code T}, {@code U} one of {@code string}, {@code long}, {@code int}. Arguments: {@code dump
 * snapshotPath uid parallelism hashmap|rocksdb state...}. A key the State Processor API visits without any
 * entry prints {@code {"empty":true,"key":k}}.
 */
public final class StateProcessorRead {

  private StateProcessorRead() {}

  public static void main(String[] args) throws Exception {
    if (args[0].equals("dump")) {
      dump(Arrays.copyOfRange(args, 1, args.length));
      return;
    }
    long started = System.nanoTime();
    Configuration conf = new Configuration();
    conf.setString("rest.bind-address", "127.0.0.1");
    conf.setString("taskmanager.host", "127.0.0.1");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
    SavepointReader savepoint = SavepointReader.read(env, args[0], new HashMapStateBackend());
    long splits = 0;
    long remaining = 0;
    try (CloseableIterator<byte[]> elements =
        savepoint
            .readListState(
                OperatorIdentifier.forUid(args[1]),
                "SourceReaderState",
                PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO)
            .executeAndCollect()) {
      while (elements.hasNext()) {
        byte[] element = elements.next();
        DataInputStream split = new DataInputStream(new ByteArrayInputStream(Arrays.copyOfRange(element, 8, element.length)));
        split.readUTF(); // split id
        long from = split.readLong();
        long to = split.readLong();
        splits++;
        remaining += to - from + 1;
      }
    }
    long millis = (System.nanoTime() - started) / 1_000_000;
    System.out.println(
        "{\"splits\": " + splits + ", \"remaining\": " + remaining + ", \"jvm_millis\": " + millis + "}");
    System.exit(0);
  }

  /** The {@code dump} use described in the class comment. */
  static void dump(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.setString("rest.bind-address", "127.0.0.1");
    conf.setString("taskmanager.host", "127.0.0.1");
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(Integer.parseInt(args[2]), conf);
    StateBackend backend = args[3].equals("rocksdb") ? new EmbeddedRocksDBStateBackend() : new HashMapStateBackend();
    SavepointReader savepoint = SavepointReader.read(env, args[0], backend);
    List<String> lines = new ArrayList<>();
    try (CloseableIterator<String> entries =
        savepoint
            .readKeyedState(
                OperatorIdentifier.forUid(args[1]),
                new Dump(Arrays.copyOfRange(args, 4, args.length)),
                Types.STRING,
                Types.STRING)
            .executeAndCollect()) {
      entries.forEachRemaining(lines::add);
    }
    Collections.sort(lines);
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      out.append(line).append('\n');
    }
    System.out.print(out);
    System.out.flush();
    System.exit(0);
  }

  static TypeInformation<?> type(String name) {
    switch (name) {
      case "string":
        return Types.STRING;
      case "long":
        return Types.LONG;
      case "int":
        return Types.INT;
      default:
        throw new IllegalArgumentException("unknown type " + name);
    }
  }

  /** A JSON string or number (the types {@link #type} allows). */
  static String json(Object value) {
    if (!(value instanceof String)) {
      return String.valueOf(value);
    }
    StringBuilder out = new StringBuilder("\"");
    for (char c : ((String) value).toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  static String line(String key, String state, String userKey, String value) {
    return "{\"key\":"
        + json(key)
        + ",\"namespace\":null,\"state\":"
        + json(state)
        + (userKey == null ? "" : ",\"user_key\":" + userKey)
        + ",\"value\":"
        + value
        + "}";
  }

  /** Emits one JSON line per entry of the named states and per timer of each key. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static final class Dump extends KeyedStateReaderFunction<String, String> {
    private final String[] specs;
    private transient List<Object> states;

    Dump(String[] specs) {
      this.specs = specs;
    }

    @Override
    public void open(Configuration parameters) {
      states = new ArrayList<>();
      for (String spec : specs) {
        String[] parts = spec.split(":");
        switch (parts[1]) {
          case "value":
            states.add(getRuntimeContext().getState(new ValueStateDescriptor(parts[0], type(parts[2]))));
            break;
          case "list":
            states.add(getRuntimeContext().getListState(new ListStateDescriptor(parts[0], type(parts[2]))));
            break;
          case "map":
            states.add(
                getRuntimeContext()
                    .getMapState(new MapStateDescriptor(parts[0], type(parts[2]), type(parts[3]))));
            break;
          default:
            throw new IllegalArgumentException("unknown state kind in " + spec);
        }
      }
    }

    @Override
    public void readKey(String key, Context context, Collector<String> out) throws Exception {
      boolean any = false;
      for (int i = 0; i < specs.length; i++) {
        String name = specs[i].split(":")[0];
        Object state = states.get(i);
        if (state instanceof ValueState) {
          Object value = ((ValueState) state).value();
          if (value != null) {
            out.collect(line(key, name, null, json(value)));
            any = true;
          }
        } else if (state instanceof ListState) {
          Iterable<Object> elements = ((ListState<Object>) state).get();
          List<String> values = new ArrayList<>();
          if (elements != null) {
            elements.forEach(element -> values.add(json(element)));
          }
          if (!values.isEmpty()) {
            out.collect(line(key, name, null, "[" + String.join(",", values) + "]"));
            any = true;
          }
        } else {
          for (Map.Entry<Object, Object> entry : ((MapState<Object, Object>) state).entries()) {
            out.collect(line(key, name, json(entry.getKey()), json(entry.getValue())));
            any = true;
          }
        }
      }
      for (Long timer : context.registeredProcessingTimeTimers()) {
        out.collect(line(key, "_timer_state/processing_user-timers", null, json(timer)));
        any = true;
      }
      for (Long timer : context.registeredEventTimeTimers()) {
        out.collect(line(key, "_timer_state/event_user-timers", null, json(timer)));
        any = true;
      }
      if (!any) {
        out.collect("{\"empty\":true,\"key\":" + json(key) + "}");
      }
    }
  }
}
