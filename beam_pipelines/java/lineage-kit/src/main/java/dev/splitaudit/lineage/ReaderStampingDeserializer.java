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

import java.util.Map;
import java.util.UUID;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A Kafka value deserializer that wraps the user's own and stamps every value with the identity of the Beam
 * reader reading it.
 *
 * <p>{@code KafkaUnboundedReader} (Beam 2.54.0 to 2.70.0) asks the read's {@code DeserializerProvider} for its
 * own deserializer instances when it is created, one per reader. A UUID made in the constructor therefore
 * names one reader instance: two readers of the same split (beam#31313 after a restore) stamp different ids
 * even when they run in the same Flink subtask and feed the same DoFn instance. {@link ReaderStamping} is the
 * provider that makes one of these per reader; use it rather than this class directly.
 *
 * @param <V> the value type of the wrapped deserializer
 */
public class ReaderStampingDeserializer<V> implements Deserializer<ReaderStamped<V>> {
  private final String readerId = UUID.randomUUID().toString();
  private final Deserializer<V> inner;

  /** Stamps what {@code inner} deserializes; {@code inner} belongs to this instance from now on. */
  public ReaderStampingDeserializer(Deserializer<V> inner) {
    this.inner = inner;
  }

  /** The id this instance stamps on every value. */
  public String getReaderId() {
    return readerId;
  }

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    inner.configure(configs, isKey);
  }

  @Override
  public ReaderStamped<V> deserialize(String topic, byte[] data) {
    return new ReaderStamped<>(readerId, inner.deserialize(topic, data));
  }

  @Override
  public ReaderStamped<V> deserialize(String topic, Headers headers, byte[] data) {
    return new ReaderStamped<>(readerId, inner.deserialize(topic, headers, data));
  }

  @Override
  public void close() {
    inner.close();
  }
}
