// Entry point of the browser playground: mounts the Svelte app. Its state lives in playground.svelte.ts (changed
// by the playground-*.svelte.ts modules) and all tfjs work in the trainer worker.
import { mount } from 'svelte';
import App from './App.svelte';
import './panels.css';

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element to mount the playground in');

export default mount(App, { target });
