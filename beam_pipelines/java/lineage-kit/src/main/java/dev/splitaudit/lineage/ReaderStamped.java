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

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.beam.sdk.coders.NullableCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.coders.StructuredCoder;
import org.checkerframework.checker.nullness.qual.Nullable;

/**
 * A Kafka record value as {@link ReaderStampingDeserializer} leaves it: the user's deserialized value and the
 * id of the Beam reader that read it.
 *
 * @param <V> the value type of the user's own deserializer
 */
public final class ReaderStamped<V> {
  private final String readerId;
  private final @Nullable V value;

  public ReaderStamped(String readerId, @Nullable V value) {
    this.readerId = readerId;
    this.value = value;
  }

  /** A UUID naming the {@code KafkaUnboundedReader} instance that deserialized this value. */
  public String getReaderId() {
    return readerId;
  }

  /** What the wrapped deserializer made of the value bytes; null for a null value (a tombstone). */
  public @Nullable V getValue() {
    return value;
  }

  @Override
  public boolean equals(@Nullable Object other) {
    if (!(other instanceof ReaderStamped)) {
      return false;
    }
    ReaderStamped<?> that = (ReaderStamped<?>) other;
    return readerId.equals(that.readerId) && Objects.equals(value, that.value);
  }

  @Override
  public int hashCode() {
    return Objects.hash(readerId, value);
  }

  @Override
  public String toString() {
    return "ReaderStamped{readerId=" + readerId + ", value=" + value + "}";
  }

  /** Encodes a {@link ReaderStamped} as the reader id and the value, nullable, in the value's own coder. */
  public static final class Coder<V> extends StructuredCoder<ReaderStamped<V>> {
    private static final StringUtf8Coder READER_ID_CODER = StringUtf8Coder.of();

    private final NullableCoder<V> valueCoder;

    private Coder(org.apache.beam.sdk.coders.Coder<V> valueCoder) {
      this.valueCoder = NullableCoder.of(valueCoder);
    }

    /** The coder of stamped values whose values {@code valueCoder} encodes. */
    public static <V> Coder<V> of(org.apache.beam.sdk.coders.Coder<V> valueCoder) {
      return new Coder<>(valueCoder);
    }

    /** The coder of the wrapped values (not nullable). */
    public org.apache.beam.sdk.coders.Coder<V> getValueCoder() {
      return valueCoder.getValueCoder();
    }

    @Override
    public void encode(ReaderStamped<V> stamped, OutputStream outStream) throws IOException {
      READER_ID_CODER.encode(stamped.readerId, outStream);
      valueCoder.encode(stamped.value, outStream);
    }

    @Override
    public ReaderStamped<V> decode(InputStream inStream) throws IOException {
      return new ReaderStamped<>(READER_ID_CODER.decode(inStream), valueCoder.decode(inStream));
    }

    @Override
    public List<? extends org.apache.beam.sdk.coders.Coder<?>> getCoderArguments() {
      return Collections.singletonList(valueCoder.getValueCoder());
    }

    @Override
    public void verifyDeterministic() throws NonDeterministicException {
      verifyDeterministic(this, "the value coder must be deterministic", valueCoder);
    }
  }
}
