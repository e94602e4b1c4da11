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

import org.apache.kafka.common.serialization.Deserializer;

/**
 * The reference pipeline's value deserializer: a value becomes its {@link Hashes#sha256Prefix} (the bytes
 * themselves are not needed downstream), null for a null value (a tombstone). The lineage kit's
 * {@code ReaderStamping} wraps it, so every value also carries the id of the reader that read it.
 */
public class ValueHashDeserializer implements Deserializer<String> {
  @Override
  public String deserialize(String topic, byte[] data) {
    return data == null ? null : Hashes.sha256Prefix(data);
  }
}
