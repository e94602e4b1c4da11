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

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.beam.sdk.coders.CoderRegistry;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.util.CoderUtils;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.Test;

/** The kit's parts outside a cluster: stamping, coders, the task thread's name, the columns. */
public class KafkaLineageTest {
  @Test
  public void everyReaderGetsItsOwnStampAroundTheUsersDeserializer() {
    ReaderStamping<String> provider = ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of());
    // KafkaIO passes the consumer configuration on; StringDeserializer reads its encoding from it.
    Map<String, Object> config = Collections.singletonMap("value.deserializer.encoding", "ISO-8859-1");
    Deserializer<ReaderStamped<String>> first = provider.getDeserializer(config, false);
    Deserializer<ReaderStamped<String>> second = provider.getDeserializer(config, false);
    byte[] bytes = "caf\u00e9".getBytes(StandardCharsets.ISO_8859_1);
    ReaderStamped<String> a = first.deserialize("t", bytes);
    ReaderStamped<String> b = second.deserialize("t", bytes);
    assertEquals("caf\u00e9", a.getValue());
    assertEquals("caf\u00e9", b.getValue());
    assertNotEquals(a.getReaderId(), b.getReaderId());
    assertEquals(a.getReaderId(), first.deserialize("t", new byte[0]).getReaderId());
    assertNull(first.deserialize("t", null).getValue());
  }

  @Test
  public void stampedValuesAndLineageRoundTripThroughTheirCoders() throws Exception {
    ReaderStamped.Coder<String> coder =
        (ReaderStamped.Coder<String>)
            ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of()).getCoder(CoderRegistry.createDefault());
    for (ReaderStamped<String> value :
        new ArrayList<>(java.util.Arrays.asList(new ReaderStamped<>("r", "v"), new ReaderStamped<String>("r", null)))) {
      assertEquals(value, CoderUtils.decodeFromByteArray(coder, CoderUtils.encodeToByteArray(coder, value)));
    }
    assertEquals(StringUtf8Coder.of(), coder.getValueCoder());
    KafkaLineage lineage = new KafkaLineage("t", 3, 1L << 40, 1, "r", 2, "j");
    KafkaLineage.Coder lineageCoder = KafkaLineage.Coder.of();
    assertEquals(
        lineage, CoderUtils.decodeFromByteArray(lineageCoder, CoderUtils.encodeToByteArray(lineageCoder, lineage)));
  }

  @Test
  public void theTaskThreadNameGivesSubtaskAndAttempt() {
    FlinkTaskAttempt task =
        FlinkTaskAttempt.ofThreadName("Source: Read/Impulse -> ToAuditRow/ParMultiDo(ToAuditRow) (2/4)#3");
    assertEquals(1, task.subtask());
    assertEquals(3, task.attempt());
    assertThrows(IllegalStateException.class, () -> FlinkTaskAttempt.ofThreadName("main"));
  }

  @Test
  public void theColumnsComeInTheirDocumentedOrder() {
    Map<String, Object> row = new LinkedHashMap<>();
    new KafkaLineage("t", 3, 7L, 1, "r", 0, "j").putColumns(row);
    assertEquals(KafkaLineage.COLUMNS, new ArrayList<>(row.keySet()));
    assertEquals(java.util.Arrays.<Object>asList("t", 3, 7L, 1, "r", 0, "j"), new ArrayList<>(row.values()));
  }
}
