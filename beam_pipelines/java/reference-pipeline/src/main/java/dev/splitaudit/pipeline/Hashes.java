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

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The content hashes of the sink's key_hash and value_hash columns. */
final class Hashes {
  private static final int PREFIX_BYTES = 8;
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  private Hashes() {}

  /**
   * The first 8 bytes of SHA-256 of {@code data} as 16 lowercase hex digits: enough to tell records apart
   * in an audit, and reproducible anywhere ({@code hashlib.sha256(data).hexdigest()[:16]} in Python).
   */
  static String sha256Prefix(byte[] data) {
    byte[] digest;
    try {
      digest = MessageDigest.getInstance("SHA-256").digest(data);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM provides SHA-256", e);
    }
    byte[] hex = new byte[2 * PREFIX_BYTES];
    for (int i = 0; i < PREFIX_BYTES; i++) {
      hex[2 * i] = HEX[(digest[i] >> 4) & 0xf];
      hex[2 * i + 1] = HEX[digest[i] & 0xf];
    }
    return new String(hex, StandardCharsets.US_ASCII);
  }
}
