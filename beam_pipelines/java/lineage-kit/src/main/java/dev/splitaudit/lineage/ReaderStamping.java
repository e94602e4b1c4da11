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

import java.lang.reflect.InvocationTargetException;
import java.util.Map;
import org.apache.beam.sdk.coders.Coder;
import org.apache.beam.sdk.coders.CoderRegistry;
import org.apache.beam.sdk.io.kafka.DeserializerProvider;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The value deserializer of a {@code KafkaIO.read} whose records should carry lineage: every Beam reader gets
 * a fresh {@link ReaderStampingDeserializer} around a fresh instance of the user's deserializer, configured
 * with the read's consumer configuration as KafkaIO configures its own.
 *
 * <pre>{@code
 * KafkaIO.<String, ReaderStamped<String>>read()
 *     .withValueDeserializer(ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of()))
 * }</pre>
 *
 * @param <V> the value type of the user's deserializer
 */
public final class ReaderStamping<V> implements DeserializerProvider<ReaderStamped<V>> {
  private static final long serialVersionUID = 1L;

  private final Class<? extends Deserializer<V>> deserializer;
  private final Coder<V> valueCoder;

  private ReaderStamping(Class<? extends Deserializer<V>> deserializer, Coder<V> valueCoder) {
    this.deserializer = deserializer;
    this.valueCoder = valueCoder;
  }

  /**
   * Stamps the values {@code deserializer} (a class with a public no-argument constructor, as KafkaIO's own
   * {@code withValueDeserializer(Class)} needs) makes, encoded with {@code valueCoder}.
   */
  public static <V> ReaderStamping<V> of(Class<? extends Deserializer<V>> deserializer, Coder<V> valueCoder) {
    return new ReaderStamping<>(deserializer, valueCoder);
  }

  @Override
  public Deserializer<ReaderStamped<V>> getDeserializer(Map<String, ?> configs, boolean isKey) {
    Deserializer<V> inner;
    try {
      inner = deserializer.getDeclaredConstructor().newInstance();
    } catch (InstantiationException
        | IllegalAccessException
        | NoSuchMethodException
        | InvocationTargetException e) {
      throw new IllegalArgumentException(
          "cannot instantiate " + deserializer.getName() + " (it needs a public no-argument constructor)", e);
    }
    ReaderStampingDeserializer<V> stamping = new ReaderStampingDeserializer<>(inner);
    stamping.configure(configs, isKey);
    return stamping;
  }

  @Override
  public Coder<ReaderStamped<V>> getCoder(CoderRegistry coderRegistry) {
    return ReaderStamped.Coder.of(valueCoder);
  }
}
