/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 */
package dev.splitaudit.lineage;

import java.util.List;
import org.apache.beam.sdk.coders.Coder;
import org.apache.beam.sdk.coders.KvCoder;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.io.kafka.KafkaRecordCoder;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.PTransform;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;

/**
 * Turns each record of a {@code KafkaIO.read} whose values {@link ReaderStamping} stamped into its lineage
 * columns and its key and value: {@code KV<KafkaLineage, KV<K, V>>}. Apply it right after the read, so that
 * Flink chains it to the source in the task thread {@link FlinkTaskAttempt} reads (it fails at setup anywhere
 * else, e.g. on the DirectRunner).
 *
 * <pre>{@code
 * PCollection<KV<KafkaLineage, KV<String, String>>> rows =
 *     pipeline
 *         .apply("Read", KafkaIO.<String, ReaderStamped<String>>read()
 *             .withValueDeserializer(ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of()))
 *             ...)
 *         .apply("Lineage", WithKafkaLineage.<String, String>of(KafkaLineage.submittedJobId()));
 * }</pre>
 *
 * @param <K> the record key type
 * @param <V> the value type of the user's deserializer
 */
public final class WithKafkaLineage<K, V>
    extends PTransform<
        PCollection<KafkaRecord<K, ReaderStamped<V>>>, PCollection<KV<KafkaLineage, KV<K, V>>>> {
  private final String jobId;

  private WithKafkaLineage(String jobId) {
    this.jobId = jobId;
  }

  /** The transform for a job with id {@code jobId} (usually {@link KafkaLineage#submittedJobId()}, from main). */
  public static <K, V> WithKafkaLineage<K, V> of(String jobId) {
    return new WithKafkaLineage<>(jobId);
  }

  @Override
  @SuppressWarnings("unchecked") // KafkaRecordCoder's arguments are its key and value coders, in that order
  public PCollection<KV<KafkaLineage, KV<K, V>>> expand(PCollection<KafkaRecord<K, ReaderStamped<V>>> records) {
    Coder<KafkaRecord<K, ReaderStamped<V>>> coder = records.getCoder();
    if (!(coder instanceof KafkaRecordCoder)) {
      throw new IllegalArgumentException("expected the KafkaRecordCoder of a KafkaIO.read, not " + coder);
    }
    List<? extends Coder<?>> arguments = coder.getCoderArguments();
    Coder<K> keyCoder = (Coder<K>) arguments.get(0);
    if (!(arguments.get(1) instanceof ReaderStamped.Coder)) {
      throw new IllegalArgumentException(
          "the read's values are not stamped: give it ReaderStamping as the value deserializer");
    }
    Coder<V> valueCoder = ((ReaderStamped.Coder<V>) arguments.get(1)).getValueCoder();
    return records
        .apply(ParDo.of(new LineageFn<K, V>(jobId)))
        .setCoder(KvCoder.of(KafkaLineage.Coder.of(), KvCoder.of(keyCoder, valueCoder)));
  }

  /** The DoFn of {@link WithKafkaLineage}: reads its task at setup, on the task thread. */
  private static final class LineageFn<K, V>
      extends DoFn<KafkaRecord<K, ReaderStamped<V>>, KV<KafkaLineage, KV<K, V>>> {
    private final String jobId;
    private transient FlinkTaskAttempt task;

    LineageFn(String jobId) {
      this.jobId = jobId;
    }

    @Setup
    public void setup() {
      task = FlinkTaskAttempt.ofCurrentThread();
    }

    @ProcessElement
    public void processElement(
        @Element KafkaRecord<K, ReaderStamped<V>> record, OutputReceiver<KV<KafkaLineage, KV<K, V>>> out) {
      ReaderStamped<V> value = record.getKV().getValue();
      out.output(KV.of(KafkaLineage.of(record, task, jobId), KV.of(record.getKV().getKey(), value.getValue())));
    }
  }
}
