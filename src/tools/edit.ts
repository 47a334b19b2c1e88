import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const editTool: Tool = {
  name: 'edit',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('edit is not implemented yet');
  },
};
