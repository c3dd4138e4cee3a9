import { startApp } from '../shared/App.tsx';
import { msspApp } from './routes.tsx';

startApp(msspApp);
