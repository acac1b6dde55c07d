// LoRA parity with PEFT's LoRA Linear forward in PyTorch (tools/parity/lora_reference.py), on the cpu backend.
import { defineLoraParitySuite } from './lora-parity-helpers';

defineLoraParitySuite('cpu');
