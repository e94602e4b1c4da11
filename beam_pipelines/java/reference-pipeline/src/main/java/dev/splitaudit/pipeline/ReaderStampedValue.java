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

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.beam.sdk.coders.AtomicCoder;
import org.apache.beam.sdk.coders.NullableCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.checkerframework.checker.nullness.qual.Nullable;

/**
 * A Kafka record value as {@link ReaderStampingDeserializer} leaves it: the id of the Beam reader that
 * read it and a hash of the value bytes (the bytes themselves are not needed downstream).
 */
public final class ReaderStampedValue {
  private final String readerId;
  private final @Nullable String valueHash;

  public ReaderStampedValue(String readerId, @Nullable String valueHash) {
    this.readerId = readerId;
    this.valueHash = valueHash;
  }

  /** A UUID naming the {@code KafkaUnboundedReader} instance that deserialized this value. */
  public String getReaderId() {
    return readerId;
  }

  /** {@link Hashes#sha256Prefix} of the value bytes; null for a null value (a tombstone). */
  public @Nullable String getValueHash() {
    return valueHash;
  }

  /** Encodes a {@link ReaderStampedValue} as its two strings, the hash nullable. */
  public static final class Coder extends AtomicCoder<ReaderStampedValue> {
    private static final Coder INSTANCE = new Coder();
    private static final StringUtf8Coder READER_ID_CODER = StringUtf8Coder.of();
    private static final NullableCoder<String> HASH_CODER = NullableCoder.of(StringUtf8Coder.of());

    public static Coder of() {
      return INSTANCE;
    }

    @Override
    public void encode(ReaderStampedValue value, OutputStream outStream) throws IOException {
      READER_ID_CODER.encode(value.readerId, outStream);
      HASH_CODER.encode(value.valueHash, outStream);
    }

    @Override
    public ReaderStampedValue decode(InputStream inStream) throws IOException {
      return new ReaderStampedValue(READER_ID_CODER.decode(inStream), HASH_CODER.decode(inStream));
    }
  }
}
