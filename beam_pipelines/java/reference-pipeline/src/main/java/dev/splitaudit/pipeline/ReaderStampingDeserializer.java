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
package dev.splitaudit.pipeline;

import java.util.UUID;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A Kafka value deserializer that stamps every value with the identity of the Beam reader reading it.
 *
 * <p>{@code KafkaUnboundedReader.start()} (Beam 2.62.0) creates its own deserializer instances through
 * {@code LocalDeserializerProvider}, one per reader. A UUID made in the constructor therefore names one
 * reader instance: two readers of the same split (beam#31313 after a restore) stamp different ids even
 * when they run in the same Flink subtask and feed the same DoFn instance.
 */
public class ReaderStampingDeserializer implements Deserializer<ReaderStampedValue> {
  private final String readerId = UUID.randomUUID().toString();

  @Override
  public ReaderStampedValue deserialize(String topic, byte[] data) {
    return new ReaderStampedValue(readerId, data == null ? null : Hashes.sha256Prefix(data));
  }
}
