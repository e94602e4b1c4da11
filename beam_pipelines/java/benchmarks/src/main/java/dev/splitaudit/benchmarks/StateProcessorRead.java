package dev.splitaudit.benchmarks;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.util.Arrays;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * The JVM baseline of benchmarks/inspect_benchmark.py: reads a NumberSequenceSource's {@code SourceReaderState}
 * with Flink's own State Processor API, the way the notes describe (charles-tan's gist): list state of
 * {@code byte[]}, then strip the 8-byte SimpleVersionedSerialization header and decode the split.
 *
 * <p>Prints one JSON line: how many splits, the sum of their remaining values ({@code to - from + 1}, a checksum
 * the Python side compares with its own reading), and the milliseconds spent inside the JVM.
 *
 * <p>Arguments: {@code savepointPath uid}.
 */
public final class StateProcessorRead {

  private StateProcessorRead() {}

  public static void main(String[] args) throws Exception {
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
}
